from __future__ import annotations

from crawler.content.agreement import MIN_SECOND_SHARE, agreed_lines

ARTICLE = [
    "The council voted on Tuesday to rebuild the old footbridge over the river.",
    "Work starts in spring and should take about eighteen months to complete.",
    "Residents asked for a wider deck so that cyclists and walkers can pass safely.",
]
RELATED = [
    "Related articles",
    "Ten ways to save on your energy bill this winter, according to experts",
    "Why the local bakery has queues around the block every Saturday morning",
]


def test_a_block_only_the_first_extractor_kept_is_left_out():
    text = "\n".join([*ARTICLE, *RELATED])
    assert agreed_lines(text, "\n".join(ARTICLE)) == "\n".join(ARTICLE)


def test_a_line_the_second_extractor_cut_differently_still_agrees():
    """Lines are compared by their word pairs, not as wholes: the second extractor may
    join or split paragraphs, or lose a word at a link."""
    second = " ".join(ARTICLE).replace("to rebuild", "to  rebuild").replace("spring ", "")
    assert agreed_lines("\n".join(ARTICLE), second) == "\n".join(ARTICLE)


def test_short_lines_are_left_out_even_when_both_have_them():
    text = "\n".join(["Share", "12 March 2024", *ARTICLE])
    assert agreed_lines(text, text) == "\n".join(ARTICLE)


def test_the_whole_text_is_kept_when_the_second_missed_the_article():
    text = "\n".join([*ARTICLE, *RELATED])
    assert agreed_lines(text, "") == text
    short = ARTICLE[0][: int(len(text) * MIN_SECOND_SHARE) - 1]
    assert agreed_lines(text, short) == text
    assert agreed_lines(text, "A text about something else entirely, long enough. " * 20) == text


def test_chinese_lines_are_compared_by_character_pairs():
    article = [
        "市政府周二宣布将在明年春天重建河上的旧人行桥",
        "居民希望桥面更宽以便骑车和步行的人安全通过",
    ]
    related = "相关阅读今年冬天节省电费的十个办法专家这样说"
    text = "\n".join([*article, related])
    assert agreed_lines(text, "".join(article)) == "\n".join(article)
