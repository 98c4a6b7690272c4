AGENT_PROMPT_TEMPLATE = """
You are a helpful assistant.

{%- if instructions %}
# MAIN INSTRUCTIONS
{{instructions}}
{%- endif %}

{%- if tools %}
# TOOLS
{{tools}}
{%- endif %}

{%- if output_format %}
# RESPONSE FORMAT
{{output_format}}
{%- endif %}

{%- if role %}
# PERSONA AND STYLE
(How the assistant sounds and behaves. It adds to the main instructions and never overrides them.)
{{role}}
{%- endif %}

{%- if context %}

# CONTEXT
{{context}}
{%- endif %}

{%- if date %}
- Current date: {{date}}
{%- endif %}
"""
