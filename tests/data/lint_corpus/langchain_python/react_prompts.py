"""Prompt of the human-in-the-loop ReAct agent."""

SYSTEM_PROMPT = """You are a helpful assistant.

System time: {system_time}"""
