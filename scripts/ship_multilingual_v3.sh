#!/usr/bin/env bash
# The v3 run's final model into the Space, with everything the Space and the docs read beside it:
#   MULTI30K=DIR LIBREOFFICE_HELP=DIR [DEBIAN_CATALOGS=DIR] bash scripts/ship_multilingual_v3.sh RUN_DIR
# 1. the weights in float16 (scripts.ship_model), 2. the domain classifier (domains.json) and its flag for text of
# neither domain, calibrated on both domains' val splits, 3. the quality mode's
# weights tuned on both domains' val (rerank.json), 4. both domains' results, v2 against v3, into
# docs/domain_results.json and the card, 5. the tokenizer's pieces per word into the card, 6. v3's CTranslate2
# time per sentence against v2's. (The unsure flag's calibration, docs/unsure_flag.json, was made by
# scripts/unsure_flag.py at commit 6d4edca, retired since.)
# Every step is resumable or quick; WORKERS (default 2) decoding processes where it helps.
set -euo pipefail
run="${1:?usage: bash scripts/ship_multilingual_v3.sh RUN_DIR}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
captions="${MULTI30K:-data/multi30k}"
software="${LIBREOFFICE_HELP:-data/libreoffice-help}"
debian="${DEBIAN_CATALOGS:-data/debian-catalogs}"
workers="${WORKERS:-2}"
v3=space/models/multilingual-v3
export OMP_NUM_THREADS=1

python -m scripts.ship_model "$run/final" "$v3" --dtype float16 --force
# the classifier and its flag for text of neither domain, checked on Debian's catalogs where they were built
checks=()
if [ -d "$debian" ]; then checks=(--check-dir "software=$debian"); fi
python -m scripts.domain_classifier --model "$v3" --data-dir "captions=$captions" --data-dir "software=$software" \
  ${checks[@]+"${checks[@]}"} --everyday tests/helpers/everyday_sentences.tsv
python -m scripts.tune_rerank --model "$v3" --data-dir "captions=$captions" --data-dir "software=$software" \
  --limit 100 --workers "$workers" --cache "$run/rerank-cache"
python -m scripts.domain_results --model v2=space/models/multilingual --model "v3=$v3" \
  --data-dir "captions=$captions" --data-dir "software=$software" --quality fast,best --slice 200 \
  --workers "$workers" --cache "$run/results-cache" --out docs/domain_results.json --card v3
python -m scripts.pieces_per_word --out docs --card "$v3"
python -m benchmarks versions --old space/models/multilingual --new "$v3" --data-dir "captions=$captions" \
  --data-dir "software=$software" --out docs/v3_speed.json
