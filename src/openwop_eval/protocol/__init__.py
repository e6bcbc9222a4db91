"""OpenWOP protocol data, pure: ids on the wire and the RFC 0082 deployment state machine."""
