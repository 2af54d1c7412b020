"""A few Multi30k validation captions (Elliott et al., 2016) in each language, for clickable examples.

The same lines in the four languages (Multi30k is four-way parallel), so an example and its
reference translation can be compared by eye.  Each one is translated well by the shipped model the page
picks for it (tests/test_examples.py checks every example against its reference): a caption the models get
wrong ("cotton" came out as "Zuckerwatte") is replaced by another validation caption.  One line is ours, not Multi30k's: the first French caption says
"écouteurs" (headphones) where Multi30k's "casque" also means a helmet, and came back as "Helm".

``DOCUMENTATION``: software documentation in the style of LibreOffice's help, written for this page (no line
of the help's train, val or test split), the same lines in the four languages; the Translate tab adds them
after the captions when a model was trained with the software domain, which reads them (tests/test_examples.py).
"""
from typing import Dict, List, Sequence

EXAMPLES: Dict[str, List[str]] = {
    "en": ["A boy wearing headphones sits on a woman's shoulders.",
           "A man in a black wetsuit is surfing on a wave.",
           "A balding man wearing a red life jacket is sitting in a small boat.",
           "Three young children stand around a blue and white barrel.",
           "A group of children play in the water under a bridge."],
    "de": ["Ein Junge mit Kopfhörern sitzt auf den Schultern einer Frau.",
           "Ein Mann in einem schwarzen Neoprenanzug surft auf einer Welle.",
           "Ein Mann mit beginnender Glatze, der eine rote Rettungsweste trägt, sitzt in einem kleinen Boot.",
           "Drei kleine Kinder stehen um ein blau-weißes Fass herum.",
           "Eine Gruppe von Kindern spielt im Wasser unter einer Brücke."],
    "fr": ["Un garçon portant des écouteurs est assis sur les épaules d'une femme.",
           "Un homme en combinaison noire surfe une vague.",
           "Un homme chauve vêtu d'un gilet de sauvetage rouge est assis dans un petit bateau.",
           "Trois jeunes enfants sont debout autour d'un baril bleu et blanc.",
           "Un groupe d'enfants jouent dans l'eau sous un pont."],
    "cs": ["Chlapec má na sobě sluchátka a sedí ženě na ramenou.",
           "Muž v černém neoprenu surfuje na vlně.",
           "Plešatící muž má na sobě červenou záchrannou vestu a sedí na malé loďce.",
           "Tři malé děti stojí okolo bílomodrého sudu.",
           "Skupina dětí si hraje ve vodě pod mostem."],
}

DOCUMENTATION: Dict[str, List[str]] = {
    "en": ["Choose Format - Cells and click the Font tab.",
           "Select the cells that you want to copy.",
           "Open the Tools menu and choose Options.",
           "Choose Insert - Image to add a picture to the document.",
           "Enter the text that you want to find."],
    "de": ["Wählen Sie Format - Zellen und klicken Sie auf das Register Schrift.",
           "Markieren Sie die Zellen, die Sie kopieren möchten.",
           "Öffnen Sie das Menü Extras und wählen Sie Optionen.",
           "Wählen Sie Einfügen - Bild, um dem Dokument ein Bild hinzuzufügen.",
           "Geben Sie den Text ein, den Sie suchen möchten."],
    "fr": ["Choisissez Format - Cellules et cliquez sur l'onglet Police.",
           "Sélectionnez les cellules que vous voulez copier.",
           "Ouvrez le menu Outils et choisissez Options.",
           "Choisissez Insertion - Image pour ajouter une image au document.",
           "Saisissez le texte que vous voulez rechercher."],
    "cs": ["Zvolte Formát - Buňky a klepněte na kartu Písmo.",
           "Vyberte buňky, které chcete zkopírovat.",
           "Otevřete nabídku Nástroje a zvolte Možnosti.",
           "Zvolte Vložit - Obrázek a přidejte do dokumentu obrázek.",
           "Zadejte text, který chcete najít."],
}
DOCUMENTATION_DOMAIN = "software"  # the models' domain that reads DOCUMENTATION


def examples_in(language: str, domains: Sequence[str] = ()) -> List[str]:
    """The examples of ``language`` (English for one without): the captions, then the documentation lines when
    ``domains`` (those the loaded models were trained with) include software."""
    language = language if language in EXAMPLES else "en"
    return EXAMPLES[language] + (DOCUMENTATION[language] if DOCUMENTATION_DOMAIN in domains else [])
