"""Placeholders, markup and accelerators: found, masked, put back exactly (transformer_hub/text/placeholders.py)."""
import pytest

from transformer_hub.formats.layout import CallbackModels
from transformer_hub.text.pipeline import translate_texts
from transformer_hub.text.segmentation import split_sentences
from transformer_hub.text.placeholders import (accelerator_marker, find_pieces, mask, mask_pair, place_accelerator,
                                               same_pieces, strip_accelerator)


@pytest.mark.parametrize("text, pieces", [
    ("Could not open file %s: %s", ["%s", "%s"]),
    ("%1$s of %2$d, %-10.3f and %% done: %m", ["%1$s", "%2$d", "%-10.3f", "%%", "%m"]),
    ("Downloaded %(size)s of %(total)s", ["%(size)s", "%(total)s"]),
    ("Hello {{person.name}}, you have {count} new messages.", ["{{person.name}}", "{count}"]),
    ("{0} files in {1}", ["{0}", "{1}"]),
    ("Run $(ARG1) with ${HOME} as $Username in %PRODUCTNAME", ["$(ARG1)", "${HOME}", "$Username", "%PRODUCTNAME"]),
    ("Press <b><i>Save</i></b> &amp; go", ["<b>", "<i>", "</i>", "</b>", "&amp;"]),
    ("Line one\\nline two\\t!", ["\\n", "\\t"]),
    ("See https://example.org/a?b=1. Or write to help@example.org", ["https://example.org/a?b=1", "help@example.org"]),
    ("Saved in ~/.config/app and /usr/share/doc/x", ["~/.config/app", "/usr/share/doc/x"]),
    ("{n, plural, one {# file} other {# files}} left", ["{n, plural, one {# file} other {# files}}"]),
    ("Copy %1 of %2 to %L3", ["%1", "%2", "%L3"]),  # Qt
    ('Read $t(legal.terms) and $t(count, {"n": 2})', ["$t(legal.terms)", '$t(count, {"n": 2})']),  # i18next
    ('<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.0//EN"><style type="text/css">p, li { white-space: pre-wrap; }'
     "</style><p>Hi</p><!-- a note -->", ['<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.0//EN">',
                                          '<style type="text/css">p, li { white-space: pre-wrap; }</style>', "<p>",
                                          "</p>", "<!-- a note -->"]),
])
def test_every_kind_of_piece_is_found_whole(text, pieces):
    assert [p.text for p in find_pieces(text)] == pieces


@pytest.mark.parametrize("text", ["50% off today", "Rock & roll", "a { lone brace", "and/or", "100 $ a day",
                                  "A dog runs in the park."])
def test_plain_text_holds_no_pieces(text):
    assert find_pieces(text) == []


def test_the_model_sees_numbered_marks_and_they_come_back():
    masked = mask("Could not open file %s: %s")
    assert masked.text == "Could not open file #1: #2"
    assert masked.unmask("Datei #1 konnte nicht geöffnet werden: #2") == \
        "Datei %s konnte nicht geöffnet werden: %s"


@pytest.mark.parametrize("source, output", [
    # LibreTranslate's reports: each piece mangled or lost by a model comes back exactly
    ("Hello {{person.name}}, you have {count} new messages.", "Hallo #1, du hast neue Nachrichten."),
    ("Value: %1$s", "Wert: #"),
    ("Welcome, $Username!", "Willkommen!"),
    ("<b><i>Warning</i></b>: disk full", "#1#2Warnung#3: Platte voll #9"),
])
def test_lost_unknown_and_repeated_marks_are_repaired(source, output):
    masked = mask(source)
    result = masked.unmask(output)
    assert result is not None and same_pieces(source, result)
    assert sorted(p.text for p in find_pieces(result)) == sorted(p.text for p in find_pieces(source))


def test_a_repeated_mark_counts_once():
    masked = mask("Open %s")
    assert masked.unmask("#1 öffnen #1") == "%s öffnen"


def test_printf_directives_without_positions_keep_their_order_or_nothing_is_returned():
    masked = mask("%d of %s")
    assert masked.unmask("#1 von #2") == "%d von %s"
    assert masked.unmask("#2 von #1") is None  # "%s von %d": msgfmt --check would fail
    assert mask("%1 of %2").unmask("#2 von #1") == "%2 von %1"  # Qt's arguments are numbered
    positional = mask("%1$d of %2$s")
    assert positional.unmask("#2 von #1") == "%2$s von %1$d"  # positional ones may move


def test_same_pieces_compares_counts_and_order():
    assert same_pieces("%s and %s", "%s und %s")
    assert not same_pieces("%s and %s", "%s und")
    assert not same_pieces("{name}", "{Name}")
    assert same_pieces("no pieces", "keine")


@pytest.mark.parametrize("source, moved", [
    ("Load of '%1' with '%2' failed", "V %2 databáze '%1."),  # v3's Czech beam output, which pofilter refused
    ("Copy %1$s to %2$s", "%2$s: %1$s kopieren"),
    ("Run $(ARG1) on $(ARG2)", "Auf $(ARG2) $(ARG1) ausführen"),
])
def test_keep_order_asks_every_variable_and_tag_in_the_sources_order(source, moved):
    assert same_pieces(source, moved)  # the program can use it: each names its argument
    assert not same_pieces(source, moved, keep_order=True)  # a catalog checker cannot
    in_order = moved.replace("%2", "%@").replace("%1", "%2").replace("%@", "%1").replace("ARG2", "ARG@").replace(
        "ARG1", "ARG2").replace("ARG@", "ARG1")
    assert same_pieces(source, in_order, keep_order=True)
    assert same_pieces("<b>%s</b> and {0} &amp; {1}", "{1} &amp; {0} und <b>%s</b>", keep_order=True)  # braces,
    # entities may move; tags may not: v3's output for skrooge's tip, which pofilter's xmltags test refused
    tip = '<p>... skrooge can <a href="skg://search">search</a> and process operations.</p>'
    assert same_pieces(tip, '<a href="skg://search"> </a> <p>.</p>')
    assert not same_pieces(tip, '<a href="skg://search"> </a> <p>.</p>', keep_order=True)


@pytest.mark.parametrize("text, marker, stripped, letter", [
    ("_Open Recent", "_", "Open Recent", "O"),
    ("&Save As...", "&", "Save As...", "S"),
    ("Save &As...", "&", "Save As...", "A"),
    ("Tom &amp; &Jerry", "&", "Tom &amp; Jerry", "J"),
    ("Fish && &Chips", "&", "Fish && Chips", "C"),
    ("~Edit", "~", "Edit", "E"),
    ("No marker", "_", "No marker", None),
    ("snake__case", "_", "snake__case", None),
    ("Open %(file_name)s with _Viewer", "_", "Open %(file_name)s with Viewer", "V"),  # the program's "_"
    ("See https://a.org/?x=1&view=2 or &Help", "&", "See https://a.org/?x=1&view=2 or Help", "H"),
    ("Set $HOME_DIR", "_", "Set $HOME_DIR", None),
])
def test_an_accelerator_is_taken_off_with_its_letter(text, marker, stripped, letter):
    assert strip_accelerator(text, marker) == (stripped, letter)


@pytest.mark.parametrize("text, marker, letter, placed", [
    ("Zuletzt geöffnet", "_", "Z", "_Zuletzt geöffnet"),
    ("Speichern unter …", "&", "u", "Speichern &unter …"),  # the same letter at a word start
    ("Enregistrer", "_", "g", "Enre_gistrer"),  # not at a word start: anywhere
    ("Uložit", "_", "S", "_Uložit"),  # absent: the first letter
    ("123", "_", "S", "123"),  # no letter: unchanged
    ("Datei", "_", None, "Datei"),
    ("Úpravy", "&", "E", "Ú&pravy"),  # a letter without a diacritic: a key of its own, pofilter's "valid" one
    ("Čeština", "_", "C", "Č_eština"),
    ("Ωμέγα", "_", "O", "_Ωμέγα"),  # no such letter: the first without a diacritic
    ("Öl", "_", "O", "Ö_l"),
    ("Čí", "_", "O", "_Čí"),  # only letters with one: the first of them
    ("%s öffnen", "_", "s", "%s ö_ffnen"),  # never inside a piece ("%_s" is no directive)
])
def test_an_accelerator_goes_back_on_a_letter_of_the_translation(text, marker, letter, placed):
    assert place_accelerator(text, marker, letter) == placed


def test_the_marker_is_the_one_most_strings_use():
    assert accelerator_marker(["_File", "_Edit", "Help"]) == "_"
    assert accelerator_marker(["&File", "E&dit"]) == "&"
    assert accelerator_marker(["File", "Edit"]) is None


@pytest.mark.parametrize("hostile", ["a" * 50_000 + "@", "-" * 60_000, "x://" * 10_000, "<a " * 20_000,
                                     "{" * 30_000 + "}" * 30_000, "%(" * 20_000, "/" + "a/" * 30_000])
def test_long_hostile_strings_are_scanned(hostile):
    # every pattern is linear: a quadratic one would take minutes on these
    pieces = find_pieces(hostile)
    assert all(hostile[p.start:p.end] == p.text for p in pieces)


def test_marks_start_past_the_ones_the_text_holds_and_its_own_stay_text():
    masked = mask("Fix #1 and #2 in %s")
    assert masked.text == "Fix #1 and #2 in #3" and masked.first == 3
    assert masked.unmask("Behebe #1 und #2 in #3") == "Behebe #1 und #2 in %s"
    assert masked.unmask("Behebe #1 und #2 in #3 #7") == "Behebe #1 und #2 in %s"  # an invented mark dropped


QT_RICH_TEXT = ('<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.0//EN" "https://www.w3.org/TR/REC-html40/strict.dtd">\n'
                '<html><head><style type="text/css">\np, li { white-space: pre-wrap; }\n</style></head>'
                "<body><p>Open the list. Then close it.</p></body></html>")  # as Qt Designer writes a label


def test_no_sentence_cut_goes_through_a_piece():
    segmented = split_sentences(QT_RICH_TEXT, "en")
    assert segmented.join(list(segmented.segments)) == QT_RICH_TEXT
    # the DOCTYPE whole (its link is no wordless end to cut off: it is inside it), the style sheet over three lines
    # in no sentence (the "}" of its rule was a wordless end, "p, li { white-space: pre-wrap;" a sentence)
    assert segmented.segments == (QT_RICH_TEXT.split("\n")[0], "<html><head>", "</head><body><p>Open the list.",
                                  "Then close it.", "</p></body></html>")


def test_every_text_path_gives_back_a_rich_text_labels_pieces():
    # a model that writes everything it sees in capitals: only what it is shown (marks aside) may change
    results = translate_texts(CallbackModels(lambda s: [x.upper() for x in s]), [QT_RICH_TEXT], src_lang="en",
                              tgt_lang="de")
    assert same_pieces(QT_RICH_TEXT, results[0].text) and "OPEN THE LIST." in results[0].text


@pytest.mark.parametrize("source, target, masked", [
    ("Could not open file %s: %s", "Datei %s: %s", ("Could not open file #1: #2", "Datei #1: #2")),
    ("Move %1$s to %2$s", "%2$s: %1$s verschieben", ("Move #1 to #2", "#2: #1 verschieben")),  # reordered
    ("Press <b>Save</b> in {app}", "{app}: <b>Speichern</b>", ("Press #1Save#2 in #3", "#3: #1Speichern#2")),
    ("Fix #1 in %s", "Behebe #1 in %s", ("Fix #1 in #2", "Behebe #1 in #2")),  # the text's own mark stays text
    ("Open %s", "%s und %d öffnen", ("Open #1", "#1 und %d öffnen")),  # a piece the source lacks stays text
    ("A dog runs.", "Ein Hund rennt.", ("A dog runs.", "Ein Hund rennt.")),
])
def test_a_training_pair_is_masked_as_serving_masks_its_source(source, target, masked):
    assert mask_pair(source, target) == masked
    assert masked[0] == mask(source).text  # the source exactly as serving shows it to the model
    if same_pieces(source, target):  # the target's marks are the ones serving turns back into its pieces
        assert mask(source).unmask(masked[1]) == target
