"""Agent-framework integrations, each an optional extra that sits on top of the ``Memory`` facade.

``engram.integrations.langgraph`` (``pip install '.[langgraph]'``): ``EngramStore``, a LangGraph
``BaseStore``. ``engram.integrations.langchain`` (``pip install '.[langchain]'``): ``EngramRetriever``,
``add_messages`` and ``EngramChatMessageHistory``. Nothing here is imported by the core, and this package imports
no framework itself: only the module a caller names loads its framework.
"""
