"""Hostile documents against the library: each refused with a ``DocumentError`` that names the limit or
the damage, before anything is translated; a seeded fuzzer over valid documents of all eight formats."""
from __future__ import annotations

import io
import json
import random
import subprocess
import sys
import zipfile

import pytest
from lxml import etree

from benchmarks.documents import make_docx, replace_member, valid_documents
from benchmarks.hostile import hostile_cases
from transformer_hub.formats import DocumentError, read_document, translate_document, translate_html
from transformer_hub.formats.budget import MAX_DEPTH, MAX_ELEMENTS, Budget, out_of_memory, scan_xml
from transformer_hub.formats.layout import Translated

SCALE = 0.055  # 220,000 empty paragraphs in the .odt (the fewest): just past the 200,000 elements allowed
EXPECTED = {  # each case: the words its refusal must hold
    "odt-empty-paragraphs": f"more than {MAX_ELEMENTS:,} elements (in content.xml)",
    "epub-empty-paragraphs": f"more than {MAX_ELEMENTS:,} elements (in OEBPS/ch1.xhtml)",
    "docx-empty-paragraphs": f"more than {MAX_ELEMENTS:,} elements (in word/document.xml)",
    "odt-nested-spans": f"nests elements more than {MAX_DEPTH} deep (in content.xml)",
    "odt-nested-sections": f"nests elements more than {MAX_DEPTH} deep (in content.xml)",
    "docx-bad-crc": "its member word/document.xml is damaged (Bad CRC-32",
    "pptx-bad-crc": "its member ppt/presentation.xml is damaged (Bad CRC-32",
    "epub-bad-crc": "its member OEBPS/ch1.xhtml is damaged (Bad CRC-32",
    "srt-huge-timestamp": "a timestamp is out of range",
    "html-nested-divs": f"nests elements more than {MAX_DEPTH} deep",
    "html-nested-bold": f"nests elements more than {MAX_DEPTH} deep",
}
CASES = hostile_cases(SCALE)


class Never:
    """A translator that must not be called: every refusal comes before any translation."""

    def __call__(self, sentences):
        raise AssertionError(f"translated {len(sentences)} sentences of a document that should be refused")


def test_every_case_of_the_issue_is_built():
    assert set(CASES) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_hostile_document_is_refused_in_words_before_translation(name):
    suffix, data = CASES[name]
    assert len(data) < 100_000 or name.startswith(("html", "epub-empty")), len(data)  # small uploads, big inside
    with pytest.raises(DocumentError) as refused:
        translate_document(data, suffix, Never(), "en")
    assert EXPECTED[name] in str(refused.value)


def test_an_html_text_of_5000_open_bold_tags_is_refused_not_a_recursion_error():
    with pytest.raises(DocumentError, match=f"The HTML text nests elements more than {MAX_DEPTH} deep"):
        translate_html("<b>" * 5000 + "A dog runs.", Never(), "en")


def test_the_limits_hold_just_below_them():
    """A document at the depth limit, and one at the element limit's scale, are read (the limits are not lower)."""
    nested = "<p>" + "<b>" * (MAX_DEPTH - 4) + "A dog runs." + "</b>" * (MAX_DEPTH - 4) + "</p>"
    assert translate_html(nested, lambda s: [t.upper() for t in s], "en").count("A DOG RUNS.") == 1
    body = "<w:p/>" * 1000 + "<w:p><w:r><w:t>A dog runs.</w:t></w:r></w:p>"
    doc = replace_member(make_docx(), "word/document.xml", (
        '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f"<w:body>{body}</w:body></w:document>").encode())
    assert read_document(doc, ".docx").texts == ["A dog runs."]


def test_the_scan_counts_text_units_and_stops_at_the_first_limit_passed():
    budget = Budget("The test document", max_elements=10**6, max_depth=10, max_text_units=3)
    with pytest.raises(DocumentError, match="more than 3 pieces of text"):
        scan_xml(io.BytesIO(b"<a>" + b"<b>x</b>" * 5 + b"</a>"), budget, "a.xml")
    assert budget.text_units == 4  # stopped at the fourth, not after the fifth
    with pytest.raises(DocumentError, match="not well-formed XML"):
        scan_xml(io.BytesIO(b"<a><b></a>"), Budget(), "b.xml")


SWEEP = """
import io, json, os, resource, sys
from transformer_hub.formats import DocumentError
from transformer_hub.formats.budget import Budget, scan_xml
data = b"<r><p>" + b"A dog runs. " * 350_000 + b"</p></r>"
outcomes = {}
for kb in range(0, 30_000, 1000):
    reader, writer = os.pipe()
    if os.fork() == 0:
        limit = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + (kb << 10)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            scan_xml(io.BytesIO(data), Budget(), "big.xml")
            outcome = b"read"
        except MemoryError:
            outcome = b"MemoryError"
        except DocumentError:
            outcome = b"DocumentError"
        os.write(writer, outcome)
        os._exit(0)
    os.close(writer)
    os.wait()
    outcomes[kb] = os.read(reader, 100).decode() or "no answer"
    os.close(reader)
print(json.dumps(outcomes))
"""


def test_libxml2_out_of_memory_is_a_memory_error_not_a_malformed_file():
    """Past an address-space cap, libxml2's failed allocation reaches lxml as a syntax error ("unknown error",
    line 0): the scan raises it as a ``MemoryError`` (the sandbox's memory budget), never as the visitor's
    malformed XML. The caps sweep where the allocation fails: inside the parse, in Python, or not at all."""
    # a fresh interpreter forks each capped child: a fork of this test process would inherit its freed heap
    done = subprocess.run([sys.executable, "-c", SWEEP], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    outcomes = json.loads(done.stdout)
    assert not [o for o in outcomes.values() if o.startswith("DocumentError")], outcomes
    assert "MemoryError" in outcomes.values() and "read" in outcomes.values(), outcomes
    syntax_error = etree.XMLSyntaxError("unknown error", etree.ErrorTypes.ERR_NO_MEMORY, 0, 0, "<string>")
    assert out_of_memory(syntax_error) and not out_of_memory(etree.XMLSyntaxError("bad", 4, 1, 1, "a.xml"))


# ----------------------------------------------------------------------------- the fuzzer
FUZZ_SEED, FUZZ_PER_FORMAT = 46, 25  # 8 formats x 25 = 200 mutated documents


def mutate(data: bytes, rng: random.Random) -> bytes:
    """``data`` truncated, with a few bits flipped, or (a ZIP package) with one member renamed."""
    kinds = ["truncate", "flip"] + (["rename"] if data[:2] == b"PK" else [])
    kind = rng.choice(kinds)
    if kind == "truncate":
        return data[:rng.randrange(1, len(data))]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    victim = rng.choice(source.namelist())
    with zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            target.writestr(member.filename + ".old" if member.filename == victim else member.filename,
                            source.read(member))
    return out.getvalue()


def fuzzed():
    """The fuzzer's documents, the same every run: (suffix, bytes)."""
    rng = random.Random(FUZZ_SEED)
    return [(suffix, mutate(data, rng)) for suffix, data in valid_documents().items() for _ in range(FUZZ_PER_FORMAT)]


def test_the_seeds_are_valid_documents_of_all_eleven_formats():
    seeds = valid_documents()
    assert sorted(seeds) == sorted([".txt", ".html", ".srt", ".docx", ".pptx", ".odt", ".odp", ".epub", ".po", ".xlf",
                                    ".json"])
    for suffix, data in seeds.items():
        assert read_document(data, suffix).texts, suffix


def test_fuzzed_documents_are_read_or_refused_with_a_document_error_only():
    documents = fuzzed()
    assert len(documents) == 275  # 25 per format
    outcomes = {"read": 0, "refused": 0}
    for suffix, data in documents:
        try:
            document = read_document(data, suffix)
            document.write([Translated.unchanged(t) for t in document.texts])
            outcomes["read"] += 1
        except DocumentError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 50 and outcomes["read"] > 10, outcomes  # the mutations bite, and not all
