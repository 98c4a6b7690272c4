from langchain_core.prompts import ChatPromptTemplate

# roles and placeholders
chat_template = ChatPromptTemplate.from_messages(
  [
    ("system", "You are a well-read assistant. You are called {name}."),
    ("user", "Hello, how is the weather where you are?"),
    ("ai", "Sunny and mild, thanks."),
    ("user", "{user_input}"),
   ]
)

messages = chat_template.format_messages(name="Ada", user_input="Tell me a short riddle.")
