"""Tests of crawler.content."""
