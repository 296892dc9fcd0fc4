"""Read the editor form of a rendered page the way a browser would submit it."""

from html.parser import HTMLParser


class _FormReader(HTMLParser):
    def __init__(self, form_id: str):
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.data: dict[str, str] = {}
        self._select: str | None = None
        self._select_first: str | None = None
        self._textarea: str | None = None
        self._option_value: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.inside = attrs.get("id") == self.form_id
            return
        if not self.inside:
            return
        name = attrs.get("name")
        if tag == "input" and name and attrs.get("type") not in ("submit", "button", "checkbox"):
            self.data[name] = attrs.get("value") or ""
        elif tag == "select" and name:
            self._select, self._select_first = name, None
        elif tag == "option" and self._select:
            value = attrs.get("value") or ""
            if self._select_first is None:
                self._select_first = value
                self.data.setdefault(self._select, value)
            if "selected" in attrs:
                self.data[self._select] = value
        elif tag == "textarea" and name:
            self._textarea = name
            self.data[name] = ""

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            # Browsers drop the newline that may follow <textarea> (HTML's parsing rule).
            name = self._textarea
            if name and self.data[name].startswith("\n"):
                self.data[name] = self.data[name][1:]
            self._textarea = None

    def handle_data(self, data):
        if self._textarea:
            self.data[self._textarea] += data


def editor_form_data(html: str) -> dict[str, str]:
    """Return the name -> value pairs the editor form would post as rendered."""
    reader = _FormReader("editor-form")
    reader.feed(html)
    return reader.data
