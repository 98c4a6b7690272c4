from datetime import datetime

from langchain_core.prompts import ChatPromptTemplate

chat_prompt = ChatPromptTemplate.from_messages([
    ("system", "You are a senior Python developer. Answer Python questions carefully and check that the code runs."),
    ("system", "The current time is: {currentTime}"),
    ("human", "Write a Python program about {question}"),
]).partial(currentTime=datetime.now())

print(chat_prompt.invoke({"question": "insertion sort"}).to_string())
