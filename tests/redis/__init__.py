"""Tests of crawler.redis."""
