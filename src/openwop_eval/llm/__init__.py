"""OpenAI-compatible model endpoints: the HTTP and retry code the `openai:` agent and judge
share."""
