"""Tests of crawler.url."""
