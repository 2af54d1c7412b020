"""What several test modules share: tolerances, tiny models and corpora, the Space's and the Hub's test doubles.
Test modules import from here (``from helpers.tolerances import f32``), never from one another."""
