"""`AclClientRPCHook`: signs a request the way `mqadmin` and ACL-enabled clients do. The signature is the base64
HmacSHA1, keyed with the secret key, of the values of the header fields plus `AccessKey` (and `SecurityToken`),
sorted by name, followed by the body; `Signature` and `AccessKey` are then added to extFields. Brokers with ACL off
ignore both (the recorded `mqadmin` frames carry them)."""
from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from remoting.command import RemotingCommand
from remoting.hashmap import java_ordered

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"


@dataclass(frozen=True, slots=True)
class AclCredentials:
    """`SessionCredentials`. `mqadmin`'s defaults (tools.yml) are rocketmq2 / 12345678."""

    access_key: str
    secret_key: str
    security_token: str | None = None

    def signature(self, request: RemotingCommand) -> str:
        fields = dict(request.ext_fields or {})
        fields.pop(SIGNATURE, None)
        fields[ACCESS_KEY] = self.access_key
        if self.security_token is not None:
            fields[SECURITY_TOKEN] = self.security_token
        content = "".join(fields[k] for k in sorted(fields)).encode("utf-8") + (request.body or b"")
        digest = hmac.new(self.secret_key.encode("utf-8"), content, hashlib.sha1).digest()
        return base64.b64encode(digest).decode("ascii")

    def __call__(self, addr: str, request: RemotingCommand) -> None:
        """The RPC hook: add Signature and AccessKey (put before the header fields, as Java does)."""
        signed = {SIGNATURE: self.signature(request), ACCESS_KEY: self.access_key}
        if self.security_token is not None:
            signed[SECURITY_TOKEN] = self.security_token
        for key, value in (request.ext_fields or {}).items():
            if key not in signed:
                signed[key] = value
        request.ext_fields = java_ordered(signed)
