"""The REST API: LibreTranslate's routes (``routes``: /translate, /detect, /languages; ``libre``: files, settings,
suggestions) and their OpenAPI schemas, reading a request and the shape of an error answer (``input``), html
texts, documents and their downloads (``files``), and the API docs page."""
