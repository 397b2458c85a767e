"""A generated shop whose links carry query parameters that no tracking list knows.

Made to measure learned URL rules (:mod:`crawler.url.learning`): of its links, more than
a third carry a parameter that changes nothing (``ref``, ``from``, ``view=full``,
``share``, ``hl``, ``v``, ``lang=en``, and ``/guides/<name>/index.html`` next to
``/guides/<name>/``), and some parameters change the page (``page`` and ``sort`` of the
catalog, ``id`` of a spec sheet, ``q`` of a search, ``lang=fr``). No parameter of the
site is in :data:`crawler.url.tracking_params.DEFAULT_STRIP_PARAMS`.

Serve it with ``python -m crawler.demo.server --site params``; ``--site params-relevant``
serves it with only the parameters that change the page in its links; ``--site params-tabs``
adds ``?tab=reviews`` to every product page, which changes one product page in ten (a
parameter that a few pages confirm as irrelevant, and that is not), ``--site params-tabs-rare``
one in fifty; ``--site params-prefix``
also serves the whole shop again under :data:`SECOND_PREFIX` (``/v2/...``, whose pages link
to ``/v2/...``), linked from every page's footer, as a site keeps an old version of its tree.
"""

from __future__ import annotations

import dataclasses
import html
import random
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit

from crawler.demo.site import Resolution, extract_hrefs

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Parameters of the site that change nothing, and their values in links.
IRRELEVANT_PARAMS = {
    "ref": ("home", "sidebar", "footer", "related"),
    "from": ("nav", "list", "item", "search"),
    "view": ("full",),
    "share": ("email", "social"),
    "hl": ("steel", "oak"),
    "v": ("2", "3"),
}
#: Parameters that select what the page shows; with ``tabs``, also ``tab``, on some pages
#: only: a product with reviews shows them at ``?tab=reviews``, one without shows its
#: description there.
RELEVANT_PARAMS = ("page", "sort", "id", "q", "lang", "tab")
#: One product in this many has reviews (the first ones), by default.
REVIEWED_EVERY = 10

#: With ``second_prefix``: the first path segment under which the whole site is served again.
SECOND_PREFIX = "/v2"

_OUT_OF_SECOND_TREE = re.compile(f'href="/(?!{SECOND_PREFIX[1:]}/)'.encode())

PAGE_SIZE = 6
SORTS = ("name", "price")
SEARCH_WORDS = ("steel", "oak", "linen", "brass", "wool")
GUIDES = ("care", "sizing", "shipping", "returns")

_WORDS = [
    "sturdy",
    "handmade",
    "finish",
    "grain",
    "polished",
    "woven",
    "soft",
    "light",
    "frame",
    "drawer",
    "handle",
    "shelf",
    "cabinet",
    "lamp",
    "stool",
    "bench",
    "cushion",
    "blanket",
    "basket",
    "mirror",
    "clock",
    "vase",
    "tray",
    "rack",
    "hook",
    "weathered",
    "natural",
    "brushed",
    "matte",
    "glazed",
    "carved",
    "folded",
    "stitched",
    "dyed",
    "waxed",
    "oiled",
    "kitchen",
    "hallway",
    "bedroom",
    "garden",
    "studio",
    "office",
    "porch",
    "attic",
    "workshop",
    "library",
]
_MATERIALS = ("steel", "oak", "linen", "brass", "wool", "walnut", "clay", "cotton")


@dataclass(frozen=True)
class Product:
    index: int
    slug: str
    name: str
    price: int
    material: str
    paragraphs: tuple[str, ...]
    specs: tuple[tuple[str, str], ...]


def _sentence(rng: random.Random, extra: str) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(9, 16))]
    words.insert(rng.randrange(len(words)), extra)
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random, extra: str, sentences: int = 4) -> str:
    return " ".join(_sentence(rng, extra) for _ in range(sentences))


def _products(count: int, seed: int) -> tuple[Product, ...]:
    rng = random.Random(seed)
    products = []
    for index in range(count):
        material = _MATERIALS[index % len(_MATERIALS)]
        noun = rng.choice(("lamp", "stool", "bench", "basket", "mirror", "tray", "vase", "rack"))
        name = f"{material.capitalize()} {noun} no. {index + 1}"
        paragraphs = tuple(_paragraph(rng, material) for _ in range(3))
        specs = (
            ("Width", f"{rng.randint(10, 90)} cm"),
            ("Height", f"{rng.randint(10, 120)} cm"),
            ("Weight", f"{rng.randint(1, 30)} kg"),
            ("Batch", f"B-{rng.randint(1000, 9999)}"),
        )
        slug = f"{material}-{noun}-{index + 1}"
        products.append(
            Product(index, slug, name, rng.randint(9, 400), material, paragraphs, specs)
        )
    return tuple(products)


class ParamSite:
    """The shop: :meth:`resolve` answers a request target; :attr:`resources` lists the
    distinct pages (by their path and the parameters that matter)."""

    def __init__(
        self,
        host: str = "localhost",
        port: int = 0,
        products: int = 36,
        seed: int = 11,
        *,
        irrelevant_links: bool = True,
        tabs: bool = False,
        reviewed_every: int = REVIEWED_EVERY,
        second_prefix: bool = False,
    ):
        if reviewed_every < 1:
            raise ValueError(f"reviewed_every must be at least 1, got {reviewed_every!r}")
        self.irrelevant_links = irrelevant_links
        self.tabs = tabs
        self.reviewed_every = reviewed_every
        self.second_prefix = second_prefix
        self.host = host
        self.port = port
        self.products = _products(products, seed)
        self._by_slug = {product.slug: product for product in self.products}
        self._rng_seed = seed
        self.pages = (len(self.products) + PAGE_SIZE - 1) // PAGE_SIZE

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    @property
    def resources(self) -> frozenset[str]:
        ids = {"/", "/about", "/about?lang=fr"}
        ids |= {
            f"/catalog?page={page}&sort={sort}"
            for page in range(1, self.pages + 1)
            for sort in SORTS
        }
        ids |= {f"/products/{product.slug}" for product in self.products}
        if self.tabs:
            ids |= {f"/products/{product.slug}?tab=reviews" for product in self.reviewed}
        ids |= {f"/item?id={product.index + 1}" for product in self.products}
        ids |= {f"/search?q={word}" for word in SEARCH_WORDS}
        ids |= {f"/guides/{guide}" for guide in GUIDES}
        return frozenset(ids)

    def resolve(self, target: str) -> Resolution:
        """The page at *target* (path and query); parameters it does not use are ignored."""
        parts = urlsplit(target)
        path = parts.path.rstrip("/") or "/"
        if self.second_prefix and (path + "/").startswith(SECOND_PREFIX + "/"):
            inner = target[len(SECOND_PREFIX) :] or "/"
            if (inner.split("?")[0] + "/").startswith(SECOND_PREFIX + "/"):
                return self.resolve("/not-found")  # one second tree, not one in another
            resolution = self.resolve(inner)
            if resolution.status != 200:
                return resolution
            # its links stay in its tree (the footer's link to it is one already)
            body = _OUT_OF_SECOND_TREE.sub(f'href="{SECOND_PREFIX}/'.encode(), resolution.body)
            return dataclasses.replace(resolution, body=body)
        query = dict(parse_qsl(parts.query))
        if path.startswith("/guides/") and path.endswith("/index.html"):
            path = path[: -len("/index.html")]
        resource = self._resource(path, query)
        if resource is None:
            body = b"<html><body><h1>Not found</h1></body></html>"
            return Resolution(404, {"Content-Type": "text/html; charset=utf-8"}, body, None)
        resource_id, title, body_html = resource
        document = (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title></head>\n<body>\n{body_html}\n</body></html>\n"
        )
        headers = {"Content-Type": "text/html; charset=utf-8"}
        return Resolution(200, headers, document.encode("utf-8"), resource_id)

    def _resource(self, path: str, query: dict[str, str]) -> tuple[str, str, str] | None:
        if path == "/":
            return "/", "Workshop goods", self._home()
        if path == "/about":
            if query.get("lang", "en") == "fr":
                return "/about?lang=fr", "À propos", self._about_fr()
            return "/about", "About", self._about()
        if path == "/catalog":
            page, sort = query.get("page", "1"), query.get("sort", "name")
            if sort not in SORTS or not page.isdigit() or not 1 <= int(page) <= self.pages:
                return None
            return (
                f"/catalog?page={page}&sort={sort}",
                f"Catalog, page {page}",
                self._catalog(int(page), sort),
            )
        if path.startswith("/products/"):
            product = self._by_slug.get(path[len("/products/") :])
            if product is None:
                return None
            if self.tabs and query.get("tab") == "reviews" and product in self.reviewed:
                return f"{path}?tab=reviews", f"Reviews: {product.name}", self._reviews(product)
            return path, product.name, self._product(product)
        if path == "/item":
            number = query.get("id", "")
            if not number.isdigit() or not 1 <= int(number) <= len(self.products):
                return None
            return f"/item?id={number}", "Spec sheet", self._item(self.products[int(number) - 1])
        if path == "/search":
            word = query.get("q", "")
            if word not in SEARCH_WORDS:
                return None
            return f"/search?q={word}", f"Search: {word}", self._search(word)
        if path.startswith("/guides/") and path[len("/guides/") :] in GUIDES:
            guide = path[len("/guides/") :]
            return path, f"Guide: {guide}", self._guide(guide)
        return None

    # Links

    def _a(self, path: str, text: str, **params: str) -> str:
        if not self.irrelevant_links:  # every parameter left changes the page
            params = {
                name: value
                for name, value in params.items()
                if name not in IRRELEVANT_PARAMS and (name, value) != ("lang", "en")
            }
            path = path.removesuffix("index.html")
        query = urlencode(sorted(params.items()))
        href = path + (f"?{query}" if query else "")
        return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'

    def _nav(self) -> str:
        links = [
            self._a("/", "Home"),
            self._a("/catalog", "Catalog", page="1", sort="name", **{"from": "nav"}),
            self._a("/about", "About", lang="en"),
            self._a("/about", "En français", lang="fr"),
        ]
        links += [
            self._a(f"/guides/{guide}/index.html", guide.capitalize()) for guide in GUIDES[:2]
        ]
        links += [self._a(f"/guides/{guide}/", guide.capitalize()) for guide in GUIDES[2:]]
        return "<nav>" + " | ".join(links) + "</nav>"

    def _footer(self, path: str) -> str:
        older = f" {self._a(SECOND_PREFIX + path, 'Version 2')}" if self.second_prefix else ""
        return (
            "<footer>"
            + self._a(path, "Share by email", share="email")
            + " "
            + self._a(path, "Reload", v="2")
            + older
            + "</footer>"
        )

    # Pages

    def _home(self) -> str:
        featured = [
            self._a(f"/products/{product.slug}", product.name, ref=IRRELEVANT_PARAMS["ref"][i % 4])
            for i, product in enumerate(self.products[::4])
        ]
        searches = [self._a("/search", word, q=word) for word in SEARCH_WORDS]
        return (
            self._nav()
            + "<h1>Workshop goods</h1><p>"
            + _paragraph(random.Random(self._rng_seed), "workshop", 6)
            + "</p><h2>Featured</h2><ul><li>"
            + "</li><li>".join(featured)
            + "</li></ul><p>Search: "
            + " ".join(searches)
            + "</p>"
            + self._footer("/")
        )

    def _about(self) -> str:
        rng = random.Random(self._rng_seed + 1)
        return self._nav() + "<h1>About us</h1><p>" + _paragraph(rng, "about", 6) + "</p>"

    def _about_fr(self) -> str:
        text = (
            "Nous fabriquons des objets de tous les jours dans notre atelier, à la main, avec "
            "des matériaux simples: acier, chêne, lin, laiton et laine. Chaque pièce est "
            "contrôlée avant l'envoi, et nous réparons ce que nous vendons. Écrivez-nous pour "
            "une commande sur mesure, un devis de livraison ou une question sur l'entretien."
        )
        return self._nav() + f"<h1>À propos</h1><p>{text}</p>"

    def _sorted(self, sort: str) -> list[Product]:
        if sort == "price":
            return sorted(self.products, key=lambda product: (product.price, product.index))
        return sorted(self.products, key=lambda product: product.name)

    def _catalog(self, page: int, sort: str) -> str:
        listed = self._sorted(sort)[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        items = []
        for i, product in enumerate(listed):
            params = {"from": "list"} if i % 2 else {}
            items.append(
                f"<li>{self._a(f'/products/{product.slug}', product.name, **params)}: "
                f"{html.escape(product.paragraphs[0][:160])} ({product.price} EUR)</li>"
            )
        pager = []
        if page > 1:
            pager.append(self._a("/catalog", "Previous", page=str(page - 1), sort=sort))
        if page < self.pages:
            pager.append(self._a("/catalog", "Next", page=str(page + 1), sort=sort))
        other = SORTS[1 - SORTS.index(sort)]
        pager.append(self._a("/catalog", f"Sort by {other}", page=str(page), sort=other))
        return (
            self._nav()
            + f"<h1>Catalog, page {page}, by {sort}</h1><ul>"
            + "".join(items)
            + "</ul><p>"
            + " ".join(pager)
            + "</p>"
        )

    def _product(self, product: Product) -> str:
        related = [
            self.products[(product.index + step) % len(self.products)] for step in (1, 5, 11)
        ]
        body = "".join(f"<p>{html.escape(paragraph)}</p>" for paragraph in product.paragraphs)
        actions = [
            self._a(f"/products/{product.slug}", "Full view", view="full"),
            self._a("/item", "Spec sheet", id=str(product.index + 1)),
        ]
        if self.tabs and (self.irrelevant_links or product in self.reviewed):
            actions.append(self._a(f"/products/{product.slug}", "Reviews", tab="reviews"))
        if product.material in SEARCH_WORDS:
            actions.append(self._a("/search", f"More in {product.material}", q=product.material))
        related_links = [
            self._a(f"/products/{other.slug}", other.name, ref="related") for other in related
        ]
        return (
            self._nav()
            + f"<article><h1>{html.escape(product.name)}</h1>{body}"
            + f"<p>Price: {product.price} EUR.</p></article>"
            + f"<p>{' '.join(actions)}</p><h2>Related</h2><ul><li>"
            + "</li><li>".join(related_links)
            + "</li></ul>"
            + self._footer(f"/products/{product.slug}")
        )

    @property
    def reviewed(self) -> frozenset[Product]:
        return frozenset(self.products[: len(self.products) // self.reviewed_every])

    def _reviews(self, product: Product) -> str:
        rng = random.Random(product.index * 104729 + self._rng_seed)
        reviews = "".join(
            f"<li><p>{_paragraph(rng, 'review', 3)}</p><p>{rng.randint(1, 5)} stars</p></li>"
            for _ in range(3)
        )
        return (
            self._nav()
            + f"<h1>Reviews of {html.escape(product.name)}</h1><ul>{reviews}</ul><p>"
            + self._a(f"/products/{product.slug}", "Back to the product")
            + "</p>"
        )

    def _item(self, product: Product) -> str:
        rows = "".join(
            f"<tr><th>{name}</th><td>{html.escape(value)}</td></tr>"
            for name, value in product.specs
        )
        rng = random.Random(product.index * 7919 + self._rng_seed)
        return (
            self._nav()
            + f"<h1>Spec sheet: {html.escape(product.name)}</h1>"
            + f"<p>{_paragraph(rng, product.material, 3)}</p><table>{rows}</table><p>"
            + self._a(f"/products/{product.slug}", "Back to the product", **{"from": "item"})
            + "</p>"
        )

    def _search(self, word: str) -> str:
        found = [product for product in self.products if product.material == word]
        items = "".join(
            f"<li>{self._a(f'/products/{product.slug}', product.name, hl=word)}: "
            f"{html.escape(product.paragraphs[1][:200])}</li>"
            for product in found
        )
        return self._nav() + f"<h1>Results for {html.escape(word)}</h1><ul>{items}</ul>"

    def _guide(self, guide: str) -> str:
        rng = random.Random(sum(map(ord, guide)) + self._rng_seed)
        paragraphs = "".join(f"<p>{_paragraph(rng, guide, 5)}</p>" for _ in range(3))
        return (
            self._nav() + f"<h1>Guide: {guide}</h1>{paragraphs}" + self._footer(f"/guides/{guide}/")
        )

    def links(self) -> Iterator[str]:
        """Every href of every page (for checking the share of links with parameters)."""
        for resource_id in sorted(self.resources):
            resolution = self.resolve(resource_id)
            yield from extract_hrefs(resolution.body.decode("utf-8"))
