"""Adapters: agents built with real frameworks, evaluated as they are.

One module per framework, each importing its framework only when used (the extras
`proctor[pydantic-ai]`, `[langgraph]`, `[openai-agents]`, `[smolagents]`):

- `proctor.agents.adapters.pydantic_ai.PydanticAIAgent`
- `proctor.agents.adapters.langgraph.LangGraphAgent`
- `proctor.agents.adapters.openai_agents.OpenAIAgentsAgent`
- `proctor.agents.adapters.smolagents.SmolAgent`

Each offers the task's tools to the framework as native tools (names made API-safe,
descriptions, argument schemas), sends every call through the ToolGateway, and records
the framework's model calls (tokens, priced) and assistant messages in the trace.
"""
