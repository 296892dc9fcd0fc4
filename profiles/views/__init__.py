"""The studio's views, one module per screen: profiles, the editor, layers and items, the
workspace file, API tokens. Function-based; each checks permissions itself (a client can
request any page or fragment directly)."""
