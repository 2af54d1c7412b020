"""The Gradio page: ``build_demo`` (``demo``), the plugin registry and its tabs (``tabs/``), what the tabs show
(examples, comparisons, the Inside and word-by-word views, the document box), and the tools other programs call
(Gradio's API, MCP)."""
