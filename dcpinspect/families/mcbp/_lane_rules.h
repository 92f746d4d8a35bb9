/* The fast lane's checks as C, generated from their declarations (rules/checks.py)
 * by dcpinspect/families/mcbp/lane_rules.py: do not edit; regenerate with
 * `python scripts/lane_rules.py`. Used only while the programs
 * lane.py compiles have this fingerprint. The facts F[n]:
 * 0:seqno, 1:nmeta, 2:extras_length, 3:datatype, 4:key_length, 5:logical_key_length,
 * 6:prefixed, 7:collection_id, 8:has_sid, 9:key_required, 10:marker_start,
 * 11:marker_end, 12:snapshot_type, 13:marker_version, 14:has_mvs, 15:mvs, 16:has_hcs,
 * 17:hcs, 18:has_hps, 19:hps, 20:last_seqno, 21:has_snapshot, 22:snap_start,
 * 23:snap_end, 24:snap_type, 25:snap_complete, 26:key_seen, 27:unacked,
 * 28:dcp_open_seen, 29:producer_known, 30:seen_from_start, 31:has_stream,
 * 32:stream_waiting, 33:strayed, 34:stream_ended, 35:late, 36:stream_ids,
 * 37:unlabelled, 38:v22_negotiated, 39:v22_unmet, 40:in_oso, 41:first_floor,
 * 42:adopted, 43:end_reached, 44:overran, 45:buffer_size, 46:overrun, 47:oso_base,
 * 48:unmarked, 49:outside, 50:open_flags_known, 51:deletion_extras
 */

#define GENERATED_FINGERPRINT "8705487a5f56ff761524"
/* messages/keys.py's RESERVED_COLLECTION_IDS */
#define RESERVED_COLLECTION_FIRST 1
#define RESERVED_COLLECTION_LAST 7

static uint64_t generated_activate(int i, const uint64_t *F) {
    uint64_t m = 0;
    switch (i) {
    case 0: /* 0x56 */
        m = UINT64_C(0xf701f); /* key-required, key-too-long, collection-key-empty, collection-id-reserved, marker-end-regression, marker-overlap, marker-inside-snapshot, mvs-above-end, hcs-without-disk */
        if (((!F[28]) && (!F[29]) && F[30])) m |= UINT64_C(1) << 5; /* dcp-open-missing */
        if ((((!F[31]) || F[32]) && (!F[33]))) m |= UINT64_C(1) << 6; /* no-stream */
        if ((F[34] && (!F[35]))) m |= UINT64_C(1) << 7; /* after-stream-end */
        if ((F[36] && (!F[37]))) m |= UINT64_C(1) << 8; /* stream-id-missing */
        if ((F[30] && (!F[38]) && (!F[39]))) m |= UINT64_C(1) << 9; /* negotiation-missing */
        if (F[40]) m |= UINT64_C(1) << 10; /* oso-unbalanced */
        if ((!F[42])) m |= UINT64_C(1) << 11; /* first-marker-start */
        if ((F[43] && (!F[44]))) m |= UINT64_C(1) << 15; /* beyond-end-seqno */
        if (((F[45] != UINT64_C(0)) && (!F[46]))) m |= UINT64_C(1) << 20; /* buffer-overrun */
        break;
    case 1: /* 0x57 */
        m = UINT64_C(0x7f); /* key-required, key-too-long, seqno-zero, nmeta-nonzero, collection-key-empty, collection-id-reserved */
        if (((!F[28]) && (!F[29]) && F[30])) m |= UINT64_C(1) << 7; /* dcp-open-missing */
        if ((((!F[31]) || F[32]) && (!F[33]))) m |= UINT64_C(1) << 8; /* no-stream */
        if ((F[34] && (!F[35]))) m |= UINT64_C(1) << 9; /* after-stream-end */
        if ((F[36] && (!F[37]))) m |= UINT64_C(1) << 10; /* stream-id-missing */
        if (F[40]) m |= UINT64_C(1) << 11; /* oso-below-start */
        if ((!F[40])) m |= UINT64_C(1) << 12; /* seqno-regression */
        if (((!F[40]) && (!F[42]) && (!F[48]))) m |= UINT64_C(1) << 13; /* item-before-marker */
        if (((!F[40]) && (!F[49]))) m |= UINT64_C(1) << 14; /* seqno-outside-snapshot */
        if ((F[43] && (!F[40]) && (!F[44]))) m |= UINT64_C(1) << 15; /* beyond-end-seqno */
        if ((!F[40])) m |= UINT64_C(1) << 16; /* duplicate-key */
        if (((F[45] != UINT64_C(0)) && (!F[46]))) m |= UINT64_C(1) << 17; /* buffer-overrun */
        break;
    case 2: /* 0x58 */
        m = UINT64_C(0x7f); /* key-required, key-too-long, nmeta-nonzero, deletion-datatype, collection-key-empty, collection-id-reserved */
        if (((!F[28]) && (!F[29]) && F[30])) m |= UINT64_C(1) << 7; /* dcp-open-missing */
        if ((((!F[31]) || F[32]) && (!F[33]))) m |= UINT64_C(1) << 8; /* no-stream */
        if ((F[34] && (!F[35]))) m |= UINT64_C(1) << 9; /* after-stream-end */
        if ((F[36] && (!F[37]))) m |= UINT64_C(1) << 10; /* stream-id-missing */
        if (F[50]) m |= UINT64_C(1) << 11; /* deletion-version */
        if (F[40]) m |= UINT64_C(1) << 12; /* oso-below-start */
        if ((!F[40])) m |= UINT64_C(1) << 13; /* seqno-regression */
        if (((!F[40]) && (!F[42]) && (!F[48]))) m |= UINT64_C(1) << 14; /* item-before-marker */
        if (((!F[40]) && (!F[49]))) m |= UINT64_C(1) << 15; /* seqno-outside-snapshot */
        if ((F[43] && (!F[40]) && (!F[44]))) m |= UINT64_C(1) << 16; /* beyond-end-seqno */
        if ((!F[40])) m |= UINT64_C(1) << 17; /* duplicate-key */
        if (((F[45] != UINT64_C(0)) && (!F[46]))) m |= UINT64_C(1) << 18; /* buffer-overrun */
        break;
    }
    return m;
}

static int generated_any(int i, uint64_t m, const uint64_t *F) {
    switch (i) {
    case 0: /* 0x56 */
        if ((m >> 0 & 1) && ((F[4] == UINT64_C(0)) && F[9])) return 1; /* key-required */
        if ((m >> 1 & 1) && ((F[4] > UINT64_C(250)) && ((!F[6]) || (F[4] > UINT64_C(251))))) return 1; /* key-too-long */
        if ((m >> 2 & 1) && ((F[5] > UINT64_C(246)) && (F[7] != UINT64_C(0)) && (!((F[4] > UINT64_C(250)) && ((!F[6]) || (F[4] > UINT64_C(251))))))) return 1; /* key-too-long */
        if ((m >> 3 & 1) && (F[6] && (F[5] == UINT64_C(0)))) return 1; /* collection-key-empty */
        if ((m >> 4 & 1) && (F[6] && (F[7] >= UINT64_C(1)) && (F[7] < UINT64_C(8)))) return 1; /* collection-id-reserved */
        if ((m >> 5 & 1) && UINT64_C(1)) return 1; /* dcp-open-missing */
        if ((m >> 6 & 1) && UINT64_C(1)) return 1; /* no-stream */
        if ((m >> 7 & 1) && UINT64_C(1)) return 1; /* after-stream-end */
        if ((m >> 8 & 1) && (!F[8])) return 1; /* stream-id-missing */
        if ((m >> 9 & 1) && (F[13] == UINT64_C(2))) return 1; /* negotiation-missing */
        if ((m >> 10 & 1) && UINT64_C(1)) return 1; /* oso-unbalanced */
        if ((m >> 11 & 1) && ((!F[21]) && (F[10] < F[41]))) return 1; /* first-marker-start */
        if ((m >> 12 & 1) && (F[21] && (F[11] <= F[23]) && (!(((F[12] & UINT64_C(16)) != 0) && ((F[12] & UINT64_C(2)) != 0) && ((F[24] & UINT64_C(2)) != 0) && (!((F[24] & UINT64_C(16)) != 0)) && (F[11] == F[23]))))) return 1; /* marker-end-regression */
        if ((m >> 13 & 1) && (F[21] && ((F[10] < F[22]) || ((F[10] <= F[23]) && (!(((F[12] & UINT64_C(16)) != 0) && ((F[12] & UINT64_C(2)) != 0) && ((F[24] & UINT64_C(2)) != 0) && (!((F[24] & UINT64_C(16)) != 0)) && (F[11] == F[23]))))))) return 1; /* marker-overlap */
        if ((m >> 14 & 1) && (F[21] && (!F[25]) && (F[20] < F[23]) && (!(((F[12] & UINT64_C(16)) != 0) && ((F[12] & UINT64_C(2)) != 0) && ((F[24] & UINT64_C(2)) != 0) && (!((F[24] & UINT64_C(16)) != 0)) && (F[11] == F[23]))))) return 1; /* marker-inside-snapshot */
        if ((m >> 15 & 1) && F[21]) return 1; /* beyond-end-seqno */
        if ((m >> 16 & 1) && (F[10] > F[11])) return 1; /* marker-end-regression */
        if ((m >> 17 & 1) && (F[14] && (F[15] > F[11]))) return 1; /* mvs-above-end */
        if ((m >> 18 & 1) && (F[18] && (F[19] > F[11]) && ((F[12] & UINT64_C(2)) != 0))) return 1; /* mvs-above-end */
        if ((m >> 19 & 1) && ((!((F[12] & UINT64_C(2)) != 0)) && ((F[16] && (F[17] != UINT64_C(0))) || (F[18] && (F[19] != UINT64_C(0)))))) return 1; /* hcs-without-disk */
        if ((m >> 20 & 1) && (F[27] >= F[45])) return 1; /* buffer-overrun */
        break;
    case 1: /* 0x57 */
        if ((m >> 0 & 1) && ((F[4] == UINT64_C(0)) && F[9])) return 1; /* key-required */
        if ((m >> 1 & 1) && ((F[4] > UINT64_C(250)) && ((!F[6]) || (F[4] > UINT64_C(251))))) return 1; /* key-too-long */
        if ((m >> 2 & 1) && ((F[5] > UINT64_C(246)) && (F[7] != UINT64_C(0)) && (!((F[4] > UINT64_C(250)) && ((!F[6]) || (F[4] > UINT64_C(251))))))) return 1; /* key-too-long */
        if ((m >> 3 & 1) && (F[0] == UINT64_C(0))) return 1; /* seqno-zero */
        if ((m >> 4 & 1) && (F[1] != UINT64_C(0))) return 1; /* nmeta-nonzero */
        if ((m >> 5 & 1) && (F[6] && (F[5] == UINT64_C(0)))) return 1; /* collection-key-empty */
        if ((m >> 6 & 1) && (F[6] && (F[7] >= UINT64_C(1)) && (F[7] < UINT64_C(8)))) return 1; /* collection-id-reserved */
        if ((m >> 7 & 1) && UINT64_C(1)) return 1; /* dcp-open-missing */
        if ((m >> 8 & 1) && UINT64_C(1)) return 1; /* no-stream */
        if ((m >> 9 & 1) && UINT64_C(1)) return 1; /* after-stream-end */
        if ((m >> 10 & 1) && (!F[8])) return 1; /* stream-id-missing */
        if ((m >> 11 & 1) && (F[0] <= F[47])) return 1; /* oso-below-start */
        if ((m >> 12 & 1) && ((F[0] <= F[20]) && (!(F[42] && (F[20] == UINT64_C(0)))))) return 1; /* seqno-regression */
        if ((m >> 13 & 1) && (!F[21])) return 1; /* item-before-marker */
        if ((m >> 14 & 1) && (F[21] && (!((F[0] >= F[22]) && (F[0] <= F[23]))))) return 1; /* seqno-outside-snapshot */
        if ((m >> 15 & 1) && (F[21] && F[25] && (F[0] >= F[22]) && (F[0] <= F[23]))) return 1; /* beyond-end-seqno */
        if ((m >> 16 & 1) && (F[21] && F[26] && (!((F[24] & UINT64_C(48)) != 0)))) return 1; /* duplicate-key */
        if ((m >> 17 & 1) && (F[27] >= F[45])) return 1; /* buffer-overrun */
        break;
    case 2: /* 0x58 */
        if ((m >> 0 & 1) && ((F[4] == UINT64_C(0)) && F[9])) return 1; /* key-required */
        if ((m >> 1 & 1) && ((F[4] > UINT64_C(250)) && ((!F[6]) || (F[4] > UINT64_C(251))))) return 1; /* key-too-long */
        if ((m >> 2 & 1) && ((F[5] > UINT64_C(246)) && (F[7] != UINT64_C(0)) && (!((F[4] > UINT64_C(250)) && ((!F[6]) || (F[4] > UINT64_C(251))))))) return 1; /* key-too-long */
        if ((m >> 3 & 1) && (F[1] != UINT64_C(0))) return 1; /* nmeta-nonzero */
        if ((m >> 4 & 1) && (((F[3] & UINT64_C(1)) != 0) && (!((F[3] & UINT64_C(4)) != 0)))) return 1; /* deletion-datatype */
        if ((m >> 5 & 1) && (F[6] && (F[5] == UINT64_C(0)))) return 1; /* collection-key-empty */
        if ((m >> 6 & 1) && (F[6] && (F[7] >= UINT64_C(1)) && (F[7] < UINT64_C(8)))) return 1; /* collection-id-reserved */
        if ((m >> 7 & 1) && UINT64_C(1)) return 1; /* dcp-open-missing */
        if ((m >> 8 & 1) && UINT64_C(1)) return 1; /* no-stream */
        if ((m >> 9 & 1) && UINT64_C(1)) return 1; /* after-stream-end */
        if ((m >> 10 & 1) && (!F[8])) return 1; /* stream-id-missing */
        if ((m >> 11 & 1) && (F[2] != F[51])) return 1; /* deletion-version */
        if ((m >> 12 & 1) && (F[0] <= F[47])) return 1; /* oso-below-start */
        if ((m >> 13 & 1) && ((F[0] <= F[20]) && (!(F[42] && (F[20] == UINT64_C(0)))))) return 1; /* seqno-regression */
        if ((m >> 14 & 1) && (!F[21])) return 1; /* item-before-marker */
        if ((m >> 15 & 1) && (F[21] && (!((F[0] >= F[22]) && (F[0] <= F[23]))))) return 1; /* seqno-outside-snapshot */
        if ((m >> 16 & 1) && (F[21] && F[25] && (F[0] >= F[22]) && (F[0] <= F[23]))) return 1; /* beyond-end-seqno */
        if ((m >> 17 & 1) && (F[21] && F[26] && (!((F[24] & UINT64_C(48)) != 0)))) return 1; /* duplicate-key */
        if ((m >> 18 & 1) && (F[27] >= F[45])) return 1; /* buffer-overrun */
        break;
    }
    return 0;
}
