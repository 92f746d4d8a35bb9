"""Name tables of the memcached binary protocol (kv_engine `include/mcbp/protocol/*.h`)."""

from __future__ import annotations

import re

MAGICS: dict[int, str] = {
    0x80: "ClientRequest",
    0x81: "ClientResponse",
    0x08: "AltClientRequest",
    0x18: "AltClientResponse",
    0x82: "ServerRequest",
    0x83: "ServerResponse",
}
REQUEST_MAGICS = frozenset({0x80, 0x08, 0x82})
RESPONSE_MAGICS = frozenset({0x81, 0x18, 0x83})
FLEX_MAGICS = frozenset({0x08, 0x18})
SERVER_MAGICS = frozenset({0x82, 0x83})


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


_CLIENT_OPCODES_CAMEL = {
    0x00: "Get", 0x01: "Set", 0x02: "Add", 0x03: "Replace", 0x04: "Delete",
    0x05: "Increment", 0x06: "Decrement", 0x07: "Quit", 0x08: "Flush", 0x09: "Getq",
    0x0A: "Noop", 0x0B: "Version", 0x0C: "Getk", 0x0D: "Getkq", 0x0E: "Append",
    0x0F: "Prepend", 0x10: "Stat", 0x11: "Setq", 0x12: "Addq", 0x13: "Replaceq",
    0x14: "Deleteq", 0x15: "Incrementq", 0x16: "Decrementq", 0x17: "Quitq",
    0x18: "Flushq", 0x19: "Appendq", 0x1A: "Prependq", 0x1B: "Verbosity",
    0x1C: "Touch", 0x1D: "Gat", 0x1E: "Gatq", 0x1F: "Hello",
    0x20: "SaslListMechs", 0x21: "SaslAuth", 0x22: "SaslStep",
    0x23: "IoctlGet", 0x24: "IoctlSet", 0x25: "ConfigValidate", 0x26: "ConfigReload",
    0x27: "AuditPut", 0x28: "AuditConfigReload", 0x29: "Shutdown",
    0x2A: "SetBucketThrottleProperties", 0x2B: "SetBucketDataLimitExceeded",
    0x2C: "SetNodeThrottleProperties", 0x2D: "SetActiveEncryptionKeys",
    0x2E: "PruneEncryptionKeys",
    0x30: "Rget", 0x31: "Rset", 0x32: "Rsetq", 0x33: "Rappend", 0x34: "Rappendq",
    0x35: "Rprepend", 0x36: "Rprependq", 0x37: "Rdelete", 0x38: "Rdeleteq",
    0x39: "Rincr", 0x3A: "Rincrq", 0x3B: "Rdecr", 0x3C: "Rdecrq",
    0x3D: "SetVbucket", 0x3E: "GetVbucket", 0x3F: "DelVbucket",
    0x40: "TapConnect", 0x41: "TapMutation", 0x42: "TapDelete", 0x43: "TapFlush",
    0x44: "TapOpaque", 0x45: "TapVbucketSet", 0x46: "TapCheckpointStart",
    0x47: "TapCheckpointEnd",
    0x48: "GetAllVbSeqnos", 0x49: "GetEx", 0x4A: "GetExReplica",
    0x50: "DcpOpen", 0x51: "DcpAddStream", 0x52: "DcpCloseStream",
    0x53: "DcpStreamReq", 0x54: "DcpGetFailoverLog", 0x55: "DcpStreamEnd",
    0x56: "DcpSnapshotMarker", 0x57: "DcpMutation", 0x58: "DcpDeletion",
    0x59: "DcpExpiration", 0x5A: "DcpFlush", 0x5B: "DcpSetVbucketState",
    0x5C: "DcpNoop", 0x5D: "DcpBufferAcknowledgement", 0x5E: "DcpControl",
    0x5F: "DcpSystemEvent", 0x60: "DcpPrepare", 0x61: "DcpSeqnoAcknowledged",
    0x62: "DcpCommit", 0x63: "DcpAbort", 0x64: "DcpSeqnoAdvanced",
    0x65: "DcpOsoSnapshot", 0x66: "DcpCacheTransfer", 0x67: "DcpCacheTransferEnd",
    0x80: "StopPersistence", 0x81: "StartPersistence", 0x82: "SetParam",
    0x83: "GetReplica", 0x85: "CreateBucket", 0x86: "DeleteBucket",
    0x87: "ListBuckets", 0x89: "SelectBucket", 0x8A: "PauseBucket",
    0x8B: "ResumeBucket", 0x91: "ObserveSeqno", 0x92: "Observe", 0x93: "EvictKey",
    0x94: "GetLocked", 0x95: "UnlockKey", 0x96: "GetFailoverLog",
    0x97: "LastClosedCheckpoint", 0x9E: "DeregisterTapClient",
    0x9F: "ResetReplicationChain",
    0xA0: "GetMeta", 0xA1: "GetqMeta", 0xA2: "SetWithMeta", 0xA3: "SetqWithMeta",
    0xA4: "AddWithMeta", 0xA5: "AddqWithMeta", 0xA6: "SnapshotVbStates",
    0xA7: "VbucketBatchCount", 0xA8: "DelWithMeta", 0xA9: "DelqWithMeta",
    0xAA: "CreateCheckpoint", 0xAC: "NotifyVbucketUpdate", 0xAD: "EnableTraffic",
    0xAE: "DisableTraffic", 0xAF: "Ifconfig", 0xB0: "ChangeVbFilter",
    0xB1: "CheckpointPersistence", 0xB2: "ReturnMeta", 0xB3: "CompactDb",
    0xB4: "SetClusterConfig", 0xB5: "GetClusterConfig", 0xB6: "GetRandomKey",
    0xB7: "SeqnoPersistence", 0xB8: "GetKeys", 0xB9: "CollectionsSetManifest",
    0xBA: "CollectionsGetManifest", 0xBB: "CollectionsGetId",
    0xBC: "CollectionsGetScopeId", 0xC1: "SetDriftCounterState",
    0xC2: "GetAdjustedTime", 0xC5: "SubdocGet", 0xC6: "SubdocExists",
    0xC7: "SubdocDictAdd", 0xC8: "SubdocDictUpsert", 0xC9: "SubdocDelete",
    0xCA: "SubdocReplace", 0xCB: "SubdocArrayPushLast", 0xCC: "SubdocArrayPushFirst",
    0xCD: "SubdocArrayInsert", 0xCE: "SubdocArrayAddUnique", 0xCF: "SubdocCounter",
    0xD0: "SubdocMultiLookup", 0xD1: "SubdocMultiMutation", 0xD2: "SubdocGetCount",
    0xD3: "SubdocReplaceBodyWithXattr", 0xDA: "RangeScanCreate",
    0xDB: "RangeScanContinue", 0xDC: "RangeScanCancel",
    0xF0: "Scrub", 0xF1: "IsaslRefresh", 0xF2: "SslCertsRefresh", 0xF3: "GetCmdTimer",
    0xF4: "SetCtrlToken", 0xF5: "GetCtrlToken", 0xF6: "UpdateExternalUserPermissions",
    0xF7: "RbacRefresh", 0xF8: "AuthProvider", 0xFB: "DropPrivilege",
    0xFC: "AdjustTimeofday", 0xFD: "EwouldblockCtl", 0xFE: "GetErrorMap",
}

#: Client opcodes (magics 0x80/0x81/0x08/0x18), spelled as the DCP documents do.
OPCODES: dict[int, str] = {k: _upper_snake(v) for k, v in _CLIENT_OPCODES_CAMEL.items()}
OPCODES[0x5D] = "DCP_BUFFER_ACKNOWLEDGEMENT"
OPCODES[0x1F] = "HELO"

#: Opcodes the server no longer implements (still decoded; a capture may hold them).
RETIRED_OPCODES = frozenset(
    set(range(0x30, 0x3D)) | set(range(0x40, 0x48))
    | {0x5A, 0x97, 0x9E, 0x9F, 0xA6, 0xA7, 0xAA, 0xAC, 0xB0, 0xB1, 0xC1, 0xC2}
)

#: Server-initiated opcodes (magics 0x82/0x83, KV `ServerOpcode`).
SERVER_OPCODES: dict[int, str] = {
    0x01: "CLUSTERMAP_CHANGE_NOTIFICATION",
    0x02: "AUTHENTICATE",
    0x03: "ACTIVE_EXTERNAL_USERS",
    0x04: "GET_AUTHORIZATION",
}

STATUS: dict[int, str] = {
    0x00: "Success", 0x01: "KeyEnoent", 0x02: "KeyEexists", 0x03: "E2big",
    0x04: "Einval", 0x05: "NotStored", 0x06: "DeltaBadval", 0x07: "NotMyVbucket",
    0x08: "NoBucket", 0x09: "Locked", 0x0A: "DcpStreamNotFound", 0x0B: "OpaqueNoMatch",
    0x0C: "EWouldThrottle", 0x0D: "EConfigOnly", 0x0E: "NotLocked",
    0x0F: "CasValueInvalid", 0x1F: "AuthStale", 0x20: "AuthError", 0x21: "AuthContinue",
    0x22: "Erange", 0x23: "Rollback", 0x24: "Eaccess", 0x25: "NotInitialized",
    0x26: "EncryptionKeyNotAvailable", 0x27: "ChecksumMismatch",
    0x28: "ExpiryOverflow", 0x29: "LockExpiryOverflow",
    0x30: "RateLimitedNetworkIngress", 0x31: "RateLimitedNetworkEgress",
    0x32: "RateLimitedMaxConnections", 0x33: "RateLimitedMaxCommands",
    0x35: "BucketSizeLimitExceeded", 0x36: "BucketResidentRatioTooLow",
    0x37: "BucketDataSizeTooBig", 0x38: "BucketDiskSpaceTooLow",
    0x50: "BucketPaused", 0x51: "Cancelled",
    0x80: "UnknownFrameInfo", 0x81: "UnknownCommand", 0x82: "Enomem",
    0x83: "NotSupported", 0x84: "Einternal", 0x85: "Ebusy", 0x86: "Etmpfail",
    0x87: "XattrEinval", 0x88: "UnknownCollection",
    0x8A: "CannotApplyCollectionsManifest", 0x8C: "UnknownScope",
    0x8D: "DcpStreamIdInvalid",
    0xA0: "DurabilityInvalidLevel", 0xA1: "DurabilityImpossible",
    0xA2: "SyncWriteInProgress", 0xA3: "SyncWriteAmbiguous",
    0xA4: "SyncWriteReCommitInProgress", 0xA5: "RangeScanCancelled",
    0xA6: "RangeScanMore", 0xA7: "RangeScanComplete", 0xA8: "VbUuidNotEqual",
    0xC0: "SubdocPathEnoent", 0xC1: "SubdocPathMismatch", 0xC2: "SubdocPathEinval",
    0xC3: "SubdocPathE2big", 0xC4: "SubdocDocE2deep", 0xC5: "SubdocValueCantinsert",
    0xC6: "SubdocDocNotJson", 0xC7: "SubdocNumErange", 0xC8: "SubdocDeltaEinval",
    0xC9: "SubdocPathEexists", 0xCA: "SubdocValueEtoodeep", 0xCB: "SubdocInvalidCombo",
    0xCC: "SubdocMultiPathFailure", 0xCD: "SubdocSuccessDeleted",
    0xCE: "SubdocXattrInvalidFlagCombo", 0xCF: "SubdocXattrInvalidKeyCombo",
    0xD0: "SubdocXattrUnknownMacro", 0xD1: "SubdocXattrUnknownVattr",
    0xD2: "SubdocXattrCantModifyVattr", 0xD3: "SubdocMultiPathFailureDeleted",
    0xD4: "SubdocInvalidXattrOrder", 0xD5: "SubdocXattrUnknownVattrMacro",
    0xD6: "SubdocCanOnlyReviveDeletedDocuments",
    0xD7: "SubdocDeletedDocumentCantHaveValue", 0xD8: "SubdocFieldNotBinaryValue",
}

#: Statuses whose responses keep extras/key/value (`isStatusSuccess`).
SUCCESS_LIKE_STATUS = frozenset({0x00, 0x21, 0x23, 0xA6, 0xA7, 0xCC, 0xCD, 0xD3})


def status_name(code: int) -> str:
    if code in STATUS:
        return STATUS[code]
    if 0xFF00 <= code <= 0xFFFF:
        return f"UserDefined(0x{code:04x})"
    return f"Unknown(0x{code:04x})"


FEATURES: dict[int, str] = {
    0x01: "Datatype (retired)", 0x02: "TLS", 0x03: "TcpNoDelay", 0x04: "MutationSeqno",
    0x05: "TcpDelay", 0x06: "Xattr", 0x07: "Xerror", 0x08: "SelectBucket",
    0x09: "Collections (retired prototype)", 0x0A: "Snappy", 0x0B: "JSON",
    0x0C: "Duplex", 0x0D: "ClustermapChangeNotification", 0x0E: "UnorderedExecution",
    0x0F: "Tracing", 0x10: "AltRequestSupport", 0x11: "SyncReplication",
    0x12: "Collections", 0x13: "SnappyEverywhere", 0x14: "PreserveTtl",
    0x15: "VAttr", 0x16: "PiTR (retired)", 0x17: "SubdocCreateAsDeleted",
    0x18: "SubdocDocumentMacroSupport", 0x19: "SubdocReplaceBodyWithXattr",
    0x1A: "ReportUnitUsage", 0x1B: "NonBlockingThrottlingMode",
    0x1C: "SubdocReplicaRead", 0x1D: "GetClusterConfigWithKnownVersion",
    0x1E: "DedupeNotMyVbucketClustermap", 0x1F: "ClustermapChangeNotificationBrief",
    0x20: "SubdocAllowsAccessOnMultipleXattrKeys", 0x21: "SubdocBinaryXattr",
    0x22: "RangeScanIncludeXattr", 0x23: "SubdocAllowReplicaReadOnDeletedDocs",
    0x24: "GetRandomKeyIncludeXattr", 0x25: "MutateWithMeta",
    0x26: "DcpSkipDeletesInInitialBackfill",
}
FEATURE_COLLECTIONS = 0x12
FEATURE_SNAPPY = 0x0A
FEATURE_JSON = 0x0B
FEATURE_XATTR = 0x06

DATATYPE_FLAGS: dict[int, str] = {0x01: "JSON", 0x02: "Snappy", 0x04: "Xattr"}
DATATYPE_JSON, DATATYPE_SNAPPY, DATATYPE_XATTR = 0x01, 0x02, 0x04
#: every datatype bit defined (a datatype above it has unknown bits)
DATATYPE_KNOWN = DATATYPE_JSON | DATATYPE_SNAPPY | DATATYPE_XATTR

VBUCKET_STATES: dict[int, str] = {1: "active", 2: "replica", 3: "pending", 4: "dead"}
