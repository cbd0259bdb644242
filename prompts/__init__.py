"""Prompts: template files (``templates/``), builders that fill them from records, and reply parsers.

Placeholders are ``{{name}}``; see ``prompts.templates``.
"""
