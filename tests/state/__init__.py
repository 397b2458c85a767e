"""Tests of crawler.state."""
