# A prompt template for the pipeline

from haystack.components.builders import PromptBuilder

template = """
<|begin_of_text|>

<|start_header_id|>system<|end_header_id|>

{% for document in documents %}
    {{ document.content }}
{% endfor %}

Answer the question from the passages above only.
If the passages do not support an answer, say that you do not know.<|eot_id|>

<|start_header_id|>user<|end_header_id|>

{{question}}<|eot_id|>

<|start_header_id|>assistant<|end_header_id|>
"""

context_prompt_builder = PromptBuilder(template=template)
