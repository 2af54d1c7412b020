#!/usr/bin/env bash
# The shipped multilingual model's training run: one model over en, de, fr, cs, all 12 directions.
#   bash scripts/train_multilingual.sh RUN_DIR [extra train options]
# Rerun the same command to continue an interrupted run (--resume; --max-minutes counts wall time over resumes).
# THREADS sets torch's intra-op threads (default 2). The run's final/ folder is what ships as
# space/models/multilingual; scripts/multilingual_results.py then scores it (so the run itself skips the
# final beam-search pass, --final-beam 0, which would score the same sets a second time).
set -euo pipefail
out="${1:?usage: bash scripts/train_multilingual.sh RUN_DIR [extra train options]}"
shift
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python -m transformer_hub train --out "$out" --langs en,de,fr,cs --vocab-size 16000 \
  --d-model 160 --n-heads 4 --d-ff 640 --n-encoder-layers 4 --n-decoder-layers 4 --dropout 0.2 \
  --norm pre --positional rope --feed-forward swiglu --max-tokens 8192 --warmup 1000 --peak-lr 0.004 \
  --max-updates 100000 --max-minutes 225 --valid-every 400 --bleu-directions 3 --save-every 150 --keep-last 10 \
  --average-last 6 --final-beam 0 --bleu-every 1 --threads "${THREADS:-2}" --name "transformer_hub multilingual (en, de, fr, cs)" \
  --resume "$@"
