"""A handful of English sentences from Multi30k test_2016_flickr (Elliott et al., 2016), for clickable examples."""

EXAMPLES = [
    "A group of people standing in front of an igloo.",
    "People are fixing the roof of a house.",
    "A Boston Terrier is running on lush green grass in front of a white fence.",
    "A girl in karate uniform breaking a stick with a front kick.",
    "Six people ride mountain bikes through a jungle environment.",
    "People sit inside a train.",
    "Five people wearing winter jackets and helmets stand in the snow, with snowmobiles in the background.",
    "A man in an orange hat starring at something.",
]
