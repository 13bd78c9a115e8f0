"""What the SQLite and PostgreSQL storage adapters share.

``codec`` turns records into JSON text and back, ``dialect`` names the few places the two SQL
dialects differ, ``table`` lays a ``Collection`` out as a table and builds its statements,
``repository`` runs them through a unit of work, and ``migrations`` applies the versioned
schema changes. Nothing here knows a particular collection or opens a connection.
"""
