#!/usr/bin/env bash
# The v4 multilingual model: v3's weights moved onto a new joint tokenizer of the three corpora (the pilots'
# choice: docs/multilingual-v4-pilots.md), trained on image captions (Multi30k), LibreOffice's help and Debian's
# message catalogs, the last two under the one `software` tag, in bf16 where the CPU (or GPU) has bf16 units.
#   MULTI30K=DIR LIBREOFFICE_HELP=DIR DEBIAN_CATALOGS=DIR bash scripts/train_v4.sh RUN_DIR [extra train options]
# DEVICE=cuda runs it on a GPU (default cpu); THREADS: torch's CPU threads (default 2).
# 3,000 updates of 8,192 tokens (~3.3 h on 2 CPU threads in float32: two sessions, so one kept checkpoint of ~65 MB in main's
# history); the rate cools down linearly to 0 over the last 1,000. The run goes in stages:
# rerun the same command to continue (--resume: an interrupted run picks up at its newest checkpoint with the same
# batches, across float32 and bf16); STAGE_MINUTES ends this stage after that many minutes with SIGTERM, which lets
# the current update finish and saves a checkpoint (default: no limit).
set -euo pipefail
out="${1:?usage: bash scripts/train_v4.sh RUN_DIR [extra train options]}"
shift
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stage=()
if [ -n "${STAGE_MINUTES:-}" ]; then stage=(timeout --signal=TERM "${STAGE_MINUTES}m"); fi
exec "${stage[@]}" python -m transformer_hub train --out "$out" --langs en,de,fr,cs \
  --data-dir "captions=${MULTI30K:-data/multi30k}" --data-dir "software=${LIBREOFFICE_HELP:-data/libreoffice-help}" \
  --data-dir "software=${DEBIAN_CATALOGS:-data/debian-catalogs}" --domain-tags \
  --init-from space/retired/multilingual-v3 --new-vocabulary --vocab-size 16000 --tokenizer-lines 100000 \
  --max-tokens 8192 --warmup 400 --peak-lr 0.002 --max-updates 3000 --cooldown-updates 1000 \
  --valid-every 500 --valid-limit 300 --bleu-directions 3 --bleu-every 1000 --save-every 50 --keep-last 4 \
  --average-last 4 --final-beam 0 --precision auto --device "${DEVICE:-cpu}" --threads "${THREADS:-2}" --seed 1 \
  --name "transformer_hub multilingual v4 (en, de, fr, cs; captions and software)" --resume "$@"
