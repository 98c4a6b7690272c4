from datetime import datetime

from langchain_core.prompts import ChatPromptTemplate

primary_assistant_prompt = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You are the help desk assistant of a regional ferry company."
            " Use the tools to look up sailings, fares and rules for the traveller's questions. "
            " Keep searching: widen the dates if the first search finds nothing. "
            " Say so when nothing fits, and offer the nearest alternative."
            "\nCurrent time: {time}.",
        ),
        ("placeholder", "{messages}"),
    ]
).partial(time=datetime.now())
