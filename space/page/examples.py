"""A few Multi30k validation captions (Elliott et al., 2016) in each language, for clickable examples.

The same lines in the four languages (Multi30k is four-way parallel), so an example and its
reference translation can be compared by eye.
"""
from typing import Dict, List

EXAMPLES: Dict[str, List[str]] = {
    "en": ["A boy wearing headphones sits on a woman's shoulders.",
           "A group of men are loading cotton onto a truck.",
           "A balding man wearing a red life jacket is sitting in a small boat.",
           "Three young children stand around a blue and white barrel.",
           "A single man in a black t-shirt standing above the crowd at a busy bar."],
    "de": ["Ein Junge mit Kopfhörern sitzt auf den Schultern einer Frau.",
           "Eine Gruppe von Männern lädt Baumwolle auf einen Lastwagen.",
           "Ein Mann mit beginnender Glatze, der eine rote Rettungsweste trägt, sitzt in einem kleinen Boot.",
           "Drei kleine Kinder stehen um ein blau-weißes Fass herum.",
           "Ein einzelner Mann in einem schwarzen T-Shirt überragt die anderen Menschen in einer gut besuchten Bar."],
    "fr": ["Un garçon avec un casque est assis sur les épaules d'une femme.",
           "Un groupe d'hommes chargent du coton dans un camion.",
           "Un homme chauve vêtu d'un gilet de sauvetage rouge est assis dans un petit bateau.",
           "Trois jeunes enfants sont debout autour d'un baril bleu et blanc.",
           "Un homme seul en T-shirt noir, debout au-dessus de la foule dans un bar très fréquenté."],
    "cs": ["Chlapec má na sobě sluchátka a sedí ženě na ramenou.",
           "Skupina mužů nakládá bavlnu na náklaďák.",
           "Plešatící muž má na sobě červenou záchrannou vestu a sedí na malé loďce.",
           "Tři malé děti stojí okolo bílomodrého sudu.",
           "Muž v černém tričku stojí nad davem v rušném baru."],
}
