"""Authentication at the edge: with --secure every request but health and reflection carries
`authorization: Bearer <access key>`; the key's sha256 must belong to a user, and AdminService needs an admin.

Why an interceptor: no servicer method can forget the check. Authorisation (whose jobs and partitions a caller
sees) is the control plane's, given the caller's identity (`identity`), with the rules in vipu/access.py.
"""

from __future__ import annotations

import grpc

from vipu.access import Identity
from vipu.errors import PermissionDenied, Unauthenticated, VipuError
from vipu.server.status import abort

OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
ADMIN_PREFIX = "/vipu.v1.AdminService/"
FIX = ("pass the key as `authorization: Bearer KEY` metadata (vipu.client: access_key; the CLI: --api-access-key"
       " or VIPU_CLI_API_ACCESS_KEY; a controller's first --secure start with no admin"
       " writes the admin's key to admin.key in its state folder; `vipu-admin create user NAME` prints a key for each"
       " new user)")


def bearer(metadata) -> str | None:
    for key, value in metadata or ():
        if key == "authorization" and value.startswith("Bearer "):
            return value[len("Bearer "):].strip()
    return None


USER_METADATA = "x-vipu-user"  # who an insecure caller says it is; with --secure the access key decides


def identity(plane, context) -> Identity:
    """Who is calling, as the control plane decides it from the call's access key or claimed user."""
    metadata = context.invocation_metadata() or ()
    claimed = next((value for key, value in metadata if key == USER_METADATA), "")
    return plane.identity(bearer(metadata), claimed)


def _refuse(error: VipuError):
    def behaviour(request, context):
        abort(context, error)

    return grpc.unary_unary_rpc_method_handler(behaviour)


class AuthInterceptor(grpc.ServerInterceptor):
    def __init__(self, plane):
        self.plane = plane

    def intercept_service(self, continuation, details):
        if details.method.startswith(OPEN_PREFIXES):
            return continuation(details)
        key = bearer(details.invocation_metadata)
        if key is None:
            return _refuse(Unauthenticated(f"this controller runs --secure and needs an access key; {FIX}",
                                           reason="ACCESS_KEY_MISSING"))
        user = self.plane.user_for_key(key)
        if user is None:
            return _refuse(Unauthenticated(f"the access key is not known to this controller; {FIX}",
                                           reason="ACCESS_KEY_UNKNOWN"))
        if details.method.startswith(ADMIN_PREFIX) and not user.admin:
            return _refuse(PermissionDenied(f"user {user.name} is not an admin; the admin service needs an admin's"
                                            " access key", reason="ADMIN_REQUIRED"))
        return continuation(details)
