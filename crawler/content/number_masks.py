"""The numbers that normalization writes as ``"0"``: dates, times, a year on its own and
counters, which change between two fetches or two copies of one page without making it
another page. :data:`NEUTRAL_NUMBER` finds them; the vocabulary it is built from (months,
counted things and their labels, units of measure) is shared with
:mod:`crawler.content.numbers_signature`, and the words around a number that its branches
look for (:data:`WORDS_BEFORE_NUMBERS`, :data:`WORDS_AFTER_NUMBERS`,
:data:`WORDS_BEFORE_AGO`) let the compiled form of :mod:`crawler.content.normalization`
try it only where it may match.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import re

__all__ = [
    "CHINESE_LABEL_WORDS",
    "CHINESE_UNITS",
    "LABEL_WORDS",
    "NEUTRAL_NUMBER",
    "UNITS",
    "WORDS_AFTER_NUMBERS",
    "WORDS_BEFORE_AGO",
    "WORDS_BEFORE_NUMBERS",
]

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
]
_COUNTED_THINGS = [
    "views",
    "view",
    "comments",
    "comment",
    "replies",
    "reply",
    "shares",
    "share",
    "likes",
    "like",
    "reads",
    "read",
    "answers",
    "answer",
    "votes",
    "vote",
    "points",
    "point",
    "followers",
    "follower",
    "subscribers",
    "subscriber",
    "retweets",
    "reposts",
    "reactions",
    "responses",
    "reviews",
    "review",
    "ratings",
    "downloads",
    "visits",
    "visit",
    "hits",
    "clicks",
    "stars",
    "forks",
    "watchers",
    "messages",
    "posts",
]
_COUNTED_THING = "(?:" + "|".join(_COUNTED_THINGS) + r"|min(?:ute)?s? read)"
_TIME_UNITS = ("second", "sec", "minute", "min", "hour", "hr", "day", "week", "month", "year")
_TIME_UNIT = "(?:" + "|".join(f"{unit}s?" for unit in _TIME_UNITS) + ")"
# Units of measure and currencies: a number written before one is a size, a capacity or a
# price, never a year ("2000 gb", "2000元"). Not the words that are units only sometimes
# ("in", "a", "t": "in 2000 a law").
UNITS = (
    "b|kb|mb|gb|tb|pb|kib|mib|gib|tib|bits?|kbps|mbps|gbps"
    "|w|kw|kwh|wh|mw|v|mv|ma|mah|ah|hz|khz|mhz|ghz|rpm"
    "|nm|mm|cm|m|km|inch|inches|ft|feet|yd|mph|kph"
    "|mg|g|kg|lbs?|oz|ml|cl|dl|l|gal|mp|px|dpi|ppi|fps"
    "|usd|eur|gbp|jpy|cny|rmb|chf|dollars|euros|pounds|yuan"
)
CHINESE_UNITS = (
    "英寸|寸|英尺|厘米|毫米|千米|公里|米|千克|公斤|克|斤|毫升|升|千瓦|瓦|伏|毫安|赫兹"
    "|美元|欧元|万元|亿元|元"
)
_UNIT_AFTER = rf"\s?(?:{UNITS})(?![\da-z])|(?:{CHINESE_UNITS})"
# Words that name the number after them: a product code, a size, a version, a price.
_LABELS = (
    "sku|model|no|nr|number|item|part|art|ref|code|size|capacity|version|ver|release"
    "|rev|revision|edition|gen|isbn|price"
)
# two characters each
_CHINESE_LABELS = "货号|型号|编号|款号|尺码|尺寸|容量|规格|价格|售价|版本"
LABEL_WORDS = frozenset(_LABELS.split("|"))
CHINESE_LABEL_WORDS = frozenset(_CHINESE_LABELS.split("|"))
_CHINESE_COUNTERS = "次|人|条|阅读|浏览|评论|回复|跟帖|参与|点击|赞"
_CHINESE_AGO = "分钟前|小时前|天前|秒前"
# Numbers start where no letter or digit of their word precedes them: the first digit,
# then a look back past it (a lookbehind first would hide the digit from the regex
# engine's fast scan). A letter of a script written without spaces is no letter of the
# number's word ("在12:00发生").
_NUMBER_START = r"\d(?<![\da-z]\d)"
_END = r"(?![\da-z])"
_NUMBER_REST = r"\d*(?:[,.]\d+)*(?:\s?[km])?"
# a month name or a counter's label right before the number ("may 1", "views 87",
# "评论45"): one fixed-width look back each, taken at the number's first digit
# (each behind a look back at the last letter alone, which rules most numbers out at once)
_AFTER_MONTH = "(?:(?<=[a-z]\\s.)(?:" + "|".join(f"(?<={month}\\s.)" for month in _MONTHS) + "))"
_COUNTER_ENDS = "".join(sorted({label[-1] for label in _CHINESE_COUNTERS.split("|")}))
_AFTER_LABEL = (
    "(?:(?<=s\\s.)(?:"
    + "|".join(f"(?<={label}\\s.)" for label in _COUNTED_THINGS if label.endswith("s"))
    + f")|(?:(?<=[{_COUNTER_ENDS}].)|(?<=[{_COUNTER_ENDS}]\\s.))(?:"
    + "|".join(f"(?<={label}.)|(?<={label}\\s.)" for label in _CHINESE_COUNTERS.split("|"))
    + "))"
)
#: What normalization writes as ``"0"``: the numbers that change between two fetches or
#: two copies of one page without making it another page. Every branch starts after the
#: number's first digit.
NEUTRAL_NUMBER = re.compile(
    _NUMBER_START
    + "(?:"
    + "|".join(
        (
            # dates: 2024-05-01, 01/05/2024, 1/5/24, 01.05.2024, 2024年5月1日, 5月1日 (not
            # 1.4.46: a version)
            r"\d{3}([-/.])\d{1,2}\1\d{1,2}"
            rf"(?:t\d{{1,2}}:\d\d(?::\d\d)?(?:\.\d+)?z?)?{_END}",
            rf"\d?([-/])\d{{1,2}}\2\d{{2,4}}{_END}",
            rf"\d?\.\d{{1,2}}\.\d{{4}}{_END}",
            r"\d{1,3}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?",
            r"\d?\s*月\s*\d{1,2}\s*[日号]",
            # may 1, 2024; 1st may 2024; 1 may (the month name stays a word)
            rf"{_AFTER_MONTH}\d?(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?{_END}",
            rf"\d?(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{'|'.join(_MONTHS)}){_END}\.?"
            rf"(?:,?\s+\d{{4}})?",
            # times: 10:32, 10:32:05, 9.05 pm, 10am
            r"\d?:\d\d(?::\d\d)?(?:\s?[ap]\.?m\b\.?)?",
            r"\d?(?:\.\d\d)?\s?[ap]\.?m\b\.?",
            # a year on its own: (c) 2024, updated 2023
            rf"(?<=1)9\d\d{_END}(?!{_UNIT_AFTER})",
            rf"(?<=2)0\d\d{_END}(?!{_UNIT_AFTER})",
            # counters: views: 87, 评论 12, 1,234 views, 3 comments, 5 minutes ago, 12 次阅读
            rf"{_AFTER_LABEL}{_NUMBER_REST}",
            rf"{_NUMBER_REST}\s*{_COUNTED_THING}{_END}",
            rf"{_NUMBER_REST}\s*{_TIME_UNIT}\s+ago{_END}",
            rf"{_NUMBER_REST}\s*(?:{_CHINESE_COUNTERS}|{_CHINESE_AGO})",
        )
    )
    + ")"
)
#: For the compiled form of normalization's number masks: the words that may stand right
#: before a masked number (a month, a counter's label), and those that may follow it (a
#: month, a counted thing, a date's Chinese words, a time unit before "ago"), by which it
#: tells where :data:`NEUTRAL_NUMBER` cannot match without trying it.
WORDS_BEFORE_NUMBERS = "|".join(
    (
        *_MONTHS,
        *(label for label in _COUNTED_THINGS if label.endswith("s")),
        *_CHINESE_COUNTERS.split("|"),
    )
)
WORDS_AFTER_NUMBERS = "|".join(
    (
        *_MONTHS,
        *_COUNTED_THINGS,
        "min",
        "年",
        "月",
        *_CHINESE_COUNTERS.split("|"),
        *_CHINESE_AGO.split("|"),
    )
)
WORDS_BEFORE_AGO = "|".join(_TIME_UNITS)
