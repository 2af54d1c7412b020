"""Every picture of the Space: the architecture diagram, attention heatmaps, the Inside tab's figures, the beam
tree, the Playground's curves, the translation's words coloured by probability, and the labels of pieces they share.

The static pictures use matplotlib's object API (``Figure`` without pyplot), which is safe to call from Gradio's
worker threads and leaves no global figure behind; the attention heatmaps are Plotly figures (hover values,
sized by the page).  Nothing here imports the rest of the Space.
"""
import warnings

# Pieces in scripts the default font lacks (CJK, emoji) are drawn as boxes, and matplotlib warns at every draw;
# Gradio draws a figure later, outside any ``catch_warnings``: this one message is filtered for the process.
warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
