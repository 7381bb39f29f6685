"""The browser board's page: serving it locally (serve) and driving it in headless
Chromium over the DevTools protocol (chromium)."""
