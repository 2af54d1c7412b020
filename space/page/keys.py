"""Keys the browser would otherwise take from a text box: a Tab typed in the Glossary box is a tab.

A glossary entry is ``source<TAB>target`` (DeepL's TSV), but a browser's Tab key moves the focus to the next
field, so typing ``bicycle<Tab>Velo`` left only ``bicycle``.  One keydown listener on the document (it works for
boxes Gradio renders later, and for re-renders) inserts the tab at the caret instead and tells Gradio the value
changed.  Shift+Tab, and Tab with Ctrl/Alt/Meta, keep their usual meaning, so keyboard users can still leave
the box.
"""
from __future__ import annotations

TAB_BOXES = ("translate-glossary",)  # elem_ids of the text boxes where Tab types a tab

HEAD = """<script>
document.addEventListener("keydown", (event) => {
  if (event.key !== "Tab" || event.shiftKey || event.ctrlKey || event.altKey || event.metaKey) return;
  const box = event.target;
  if (!(box instanceof HTMLTextAreaElement) || !box.closest(%s)) return;
  event.preventDefault();
  box.setRangeText("\\t", box.selectionStart, box.selectionEnd, "end");
  box.dispatchEvent(new Event("input", { bubbles: true }));
}, true);
</script>""" % repr(", ".join(f"#{name}" for name in TAB_BOXES)).replace("'", '"')
