"""The design tokens: tokens.css is the only stylesheet with raw colours, and every name used is defined.

A raw colour is a hex value, an rgb()/rgba()/hsl()/hsla()/hwb()/lab()/lch()/oklab()/oklch()/color() call or
a CSS named colour in a declaration's value. `transparent`, `currentColor` and `inherit` are not colours.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = Path(__file__).resolve().parents[2] / "static" / "css"
TOKENS = CSS / "tokens.css"

NAMED = set("""aliceblue antiquewhite aqua aquamarine azure beige bisque black blanchedalmond blue blueviolet brown
burlywood cadetblue chartreuse chocolate coral cornflowerblue cornsilk crimson cyan darkblue darkcyan darkgoldenrod
darkgray darkgreen darkgrey darkkhaki darkmagenta darkolivegreen darkorange darkorchid darkred darksalmon darkseagreen
darkslateblue darkslategray darkslategrey darkturquoise darkviolet deeppink deepskyblue dimgray dimgrey dodgerblue
firebrick floralwhite forestgreen fuchsia gainsboro ghostwhite gold goldenrod gray green greenyellow grey honeydew
hotpink indianred indigo ivory khaki lavender lavenderblush lawngreen lemonchiffon lightblue lightcoral lightcyan
lightgoldenrodyellow lightgray lightgreen lightgrey lightpink lightsalmon lightseagreen lightskyblue lightslategray
lightslategrey lightsteelblue lightyellow lime limegreen linen magenta maroon mediumaquamarine mediumblue mediumorchid
mediumpurple mediumseagreen mediumslateblue mediumspringgreen mediumturquoise mediumvioletred midnightblue mintcream
mistyrose moccasin navajowhite navy oldlace olive olivedrab orange orangered orchid palegoldenrod palegreen
paleturquoise palevioletred papayawhip peachpuff peru pink plum powderblue purple rebeccapurple red rosybrown
royalblue saddlebrown salmon sandybrown seagreen seashell sienna silver skyblue slateblue slategray slategrey snow
springgreen steelblue tan teal thistle tomato turquoise violet wheat white whitesmoke yellow yellowgreen
canvas canvastext linktext visitedtext activetext buttonface buttontext field fieldtext highlight
highlighttext mark marktext graytext""".split())

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_DECLARATION = re.compile(r"(--[\w-]+|[a-z-]+)\s*:\s*([^;{}]+)(?=[;}])")
_HEX = re.compile(r"#[0-9a-fA-F]{3,8}\b")
_FUNCTION = re.compile(r"\b(rgba?|hsla?|hwb|lab|lch|oklab|oklch|color)\(", re.I)
_STRING = re.compile(r"\"[^\"]*\"|'[^']*'")


def raw_colours(css: str) -> list[str]:
    """Every raw colour in the declarations' values of `css` (comments and quoted strings ignored)."""
    found = []
    for prop, value in _DECLARATION.findall(_COMMENT.sub("", css)):
        if prop in ("grid-template-areas", "content", "font-family", "--font-sans", "--font-mono"):
            continue
        bare = _STRING.sub("", value)
        found += [f"{prop}: {m}" for m in _HEX.findall(bare)]
        found += [f"{prop}: {m}(" for m in _FUNCTION.findall(bare)]
        found += [f"{prop}: {w}" for w in re.findall(r"(?<![\w-])[a-zA-Z]+(?![\w-])", bare) if w.lower() in NAMED]
    return found


def sheets() -> list[Path]:
    return sorted(p for p in CSS.glob("*.css") if p != TOKENS)


@pytest.mark.parametrize("sheet", sheets(), ids=lambda p: p.name)
def test_no_raw_colour_outside_tokens(sheet: Path) -> None:
    assert raw_colours(sheet.read_text(encoding="utf-8")) == []


def test_the_detector_finds_each_kind_of_raw_colour() -> None:
    css = """a { color: #fff; background: rgb(0 0 0); border-color: hsl(0 0% 0%) }
             b { outline: 2px solid rebeccapurple; white-space: nowrap; font-family: "White Rabbit" }
             #bad { color: var(--bad); fill: currentColor; background: transparent }"""
    assert raw_colours(css) == ["color: #fff", "background: rgb(", "border-color: hsl(", "outline: rebeccapurple"]


def test_tokens_hold_colours_and_a_dark_theme() -> None:
    tokens = TOKENS.read_text(encoding="utf-8")
    assert raw_colours(tokens), "tokens.css is where the colours live"
    assert "@media (prefers-color-scheme: dark)" in tokens
    for outcome in ("pass", "fail", "skipped", "asked-again", "switched-off", "unavailable"):
        assert f"--check-{outcome}:" in tokens and f"--check-{outcome}-bg:" in tokens
    for part in ("prefix", "payload", "sig"):
        assert f"--tok-{part}:" in tokens


#: Custom properties set from JavaScript rather than a stylesheet.
SET_BY_SCRIPT = {"--fit", "--keyboard"}


def test_every_custom_property_used_is_defined() -> None:
    defined = set(SET_BY_SCRIPT)
    used: dict[str, set[str]] = {}
    for sheet in [TOKENS, *sheets()]:
        css = _COMMENT.sub("", sheet.read_text(encoding="utf-8"))
        defined |= set(re.findall(r"(--[\w-]+)\s*:", css))
        for name in re.findall(r"var\((--[\w-]+)", css):
            used.setdefault(name, set()).add(sheet.name)
    assert {name: files for name, files in used.items() if name not in defined} == {}


@pytest.mark.parametrize("name", ["site.css", "demo.css", "classroom.css"])
def test_each_entry_stylesheet_imports_the_tokens(name: str) -> None:
    css = _COMMENT.sub("", (CSS / name).read_text(encoding="utf-8")).lstrip()
    assert css.startswith('@import url("tokens.css");')
