#!/usr/bin/env bash
# The v4 run's final model into the Space, with everything the Space and the docs read beside it:
#   MULTI30K=DIR LIBREOFFICE_HELP=DIR DEBIAN_CATALOGS=DIR bash scripts/ship_v4.sh RUN_DIR
# 1. the weights in float16 (scripts.ship_model) as space/models/multilingual-v4, 2. the domain classifier
# (domains.json) and its flag for text of neither domain, counted and calibrated on both domains' corpora (the
# catalogs are software, as in training), 3. the quality mode's weights tuned on both domains' val (rerank.json), 4. every test set, v2, v3
# and v4 side by side, beam 5, against v4's targets (scripts/results_table.py) into docs/v4_results.json and the card
# (~70 minutes on 2 cores: so without the quality mode's n-best, v4's pivot through English, and v3 on the catalogs):
# Multi30k's test_2016_flickr, LibreOffice help's test split, the catalogs' test split (by entry length),
# 5. the tokenizer's pieces per word into the card, 6. v4's CTranslate2 time per sentence against v3's.
# Every step is resumable or quick; WORKERS (default 2) decoding processes where it helps.
set -euo pipefail
run="${1:?usage: bash scripts/ship_v4.sh RUN_DIR}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
captions="${MULTI30K:-data/multi30k}"
software="${LIBREOFFICE_HELP:-data/libreoffice-help}"
catalogs="${DEBIAN_CATALOGS:-data/debian-catalogs}"
workers="${WORKERS:-2}"
v3=space/retired/multilingual-v3
v4=space/models/multilingual-v4
export OMP_NUM_THREADS=1

python -m scripts.ship_model "$run/final" "$v4" --dtype float16 --force
python -m scripts.domain_classifier --model "$v4" --data-dir "captions=$captions" --data-dir "software=$software" \
  --data-dir "software=$catalogs" --everyday tests/helpers/everyday_sentences.tsv
python -m scripts.tune_rerank --model "$v4" --data-dir "captions=$captions" --data-dir "software=$software" \
  --limit 100 --workers "$workers" --cache "$run/rerank-cache"
python -m scripts.domain_results --model v2=space/models/multilingual --model "v3=$v3" --model "v4=$v4" \
  --data-dir "captions=$captions" --data-dir "software=$software" --data-dir "catalogs=$catalogs" \
  --only v2=captions --only v3=captions,software --no-pivot --targets v4 --engine ctranslate2 --quality fast \
  --slice 200 --workers "$workers" --cache "$run/results-cache" --out docs/v4_results.json --card v4
python -m scripts.pieces_per_word --out docs --card "$v4"
python -m benchmarks versions --old "$v3" --new "$v4" --data-dir "captions=$captions" \
  --data-dir "software=$software" --out docs/v4_speed.json
