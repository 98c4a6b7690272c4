from langchain_core.prompts import ChatPromptTemplate

system_chat_prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "你是一个读书助手，请根据用户的问题回答，我叫{username}"),
    ]
)
human_chat_prompt = ChatPromptTemplate.from_messages(
    [
        ("human", "{query}"),
    ]
)

chat_prompt = system_chat_prompt + human_chat_prompt
