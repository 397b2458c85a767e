"""Extensions and modules that tests load into crawls to observe them."""
