#!/usr/bin/env bash
# The v3 multilingual model: v2's weights and tokenizer, trained on both domains, image captions (Multi30k) and
# software documentation (LibreOffice's help, `python -m transformer_hub corpus libreoffice-help`), each source
# starting with its domain's tag (the choice docs/multilingual-v3-pilots.md records).
#   MULTI30K=DIR LIBREOFFICE_HELP=DIR bash scripts/train_multilingual_v3.sh RUN_DIR [extra train options]
# 3,900 updates; the rate cools down linearly to 0 over the last 967 ("warm-up, stable, decay"). Then
# `bash scripts/ship_multilingual_v3.sh RUN_DIR` puts the final model into the Space with its results.
# Rerun the same command to continue (--resume: an interrupted run picks up at its newest checkpoint, with the
# same batches; --max-minutes counts wall time over all resumes). THREADS: torch's threads (default 2).
set -euo pipefail
out="${1:?usage: bash scripts/train_multilingual_v3.sh RUN_DIR [extra train options]}"
shift
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python -m transformer_hub train --out "$out" --langs en,de,fr,cs \
  --data-dir "captions=${MULTI30K:-data/multi30k}" --data-dir "software=${LIBREOFFICE_HELP:-data/libreoffice-help}" \
  --domain-tags --init-from space/models/multilingual --max-tokens 8192 --warmup 400 --peak-lr 0.002 \
  --max-updates 3900 --cooldown-updates 967 --max-minutes 2000 --valid-every 400 --valid-limit 300 --bleu-directions 3 --save-every 50 \
  --keep-last 4 --average-last 4 --final-beam 0 --bleu-every 1000 --threads "${THREADS:-2}" \
  --name "transformer_hub multilingual v3 (en, de, fr, cs; captions and software)" --resume "$@"
