"""The compiled part of the package: optional, its pure-Python reference is used without it."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "crawler.content._speedups",
            sources=["crawler/content/_speedups.c"],
            # a machine without a C compiler still installs the package
            optional=True,
        )
    ]
)
