from langchain.prompts import ChatPromptTemplate, HumanMessagePromptTemplate, SystemMessagePromptTemplate, MessagesPlaceholder

system_prompt_template = """
Your name is BakeryBot. You are a helper that answers questions about the bakery's menu. Today's date is {today_date}.

Answer the question from the pieces of retrieved context below.
If the context does not give you the answer, say that you cannot tell, simply say that you cannot tell, and never invent a reply.
Keep the reply to three sentences at most and make it short.
Always reply in the language the question was asked in.

{context}
"""

system_prompt = ChatPromptTemplate(
    messages=[
        SystemMessagePromptTemplate.from_template(system_prompt_template),
    ],
    input_variables=["today_date", "context"],
)
