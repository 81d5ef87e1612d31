"""The hand-built five-page fruit site shared by the site-level and inspect tests."""

PAGES = ("a", "b", "c", "d", "e")
ARTICLES = {
    "a": ("Apples", "Apples grow on trees in orchards.", "They are harvested in autumn."),
    "b": ("Bananas", "Bananas grow in tropical climates.", "They are picked while green."),
    "c": ("Cherries", "Cherries are small stone fruits.", "Birds like them very much."),
    "d": ("Dates", "Dates come from date palms.", "They are very sweet when dried."),
    "e": ("Elderberries", "Elderberries grow on shrubs.", "They must be cooked before eating."),
}


def site_page(name, links=PAGES, note=""):
    """One page of the fruit site: header with the menu of `links`, the article (with `note`,
    HTML, after its heading), footer."""
    title, first, second = ARTICLES[name]
    menu = "".join(f"<li><a href='/{p}.html'>{p.upper()}</a></li>" for p in links)
    return (f"<html><head><title>{title}</title></head><body>"
            f"<div id=header><h1>Fruit Site</h1><ul id=menu>{menu}</ul></div>"
            f"<div id=content><h2>{title}</h2>{note}<p>{first}</p><p>{second}</p></div>"
            f"<div id=footer><p>Copyright 2024 Fruit Site</p></div></body></html>")
