"""The hand-built five-page fruit site shared by the site-level and inspect tests."""

PAGES = ("a", "b", "c", "d", "e")
ARTICLES = {
    "a": ("Apples", "Apples grow on trees in orchards.", "They are harvested in autumn."),
    "b": ("Bananas", "Bananas grow in tropical climates.", "They are picked while green."),
    "c": ("Cherries", "Cherries are small stone fruits.", "Birds like them very much."),
    "d": ("Dates", "Dates come from date palms.", "They are very sweet when dried."),
    "e": ("Elderberries", "Elderberries grow on shrubs.", "They must be cooked before eating."),
}
