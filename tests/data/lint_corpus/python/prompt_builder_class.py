from langchain_core.prompts import ChatPromptTemplate
import datetime

class PromptBuilder:

    def __init__(self, systemPrompt: str, input: str, history: list) -> ChatPromptTemplate :

        today = datetime.datetime.today().strftime("%D")

        if not (systemPrompt := systemPrompt.strip()):
            systemPrompt = f"You are a planning helper. Today the day is {today}. Break the request into a short plan, use a tool only when you cannot answer without one, and reply politely with a little humour. Say which tool you used and why, in one sentence."

        prompt = ChatPromptTemplate(
            [
                ("system", systemPrompt),
                ("human", input),
                ("placeholder", history)
            ]
        )

        return prompt
