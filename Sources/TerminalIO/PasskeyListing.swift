import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import JSON
import PasskeyStoreIO
import WebAuthn
import WebAuthnClient

/// What `passkey list` shows: the index's passkeys (no passphrase needed), or with `--verify` the store's own rows,
/// damaged ones included. Text for a person, with every site-chosen name terminal-safe; JSON for scripts, never with
/// a private key.
public enum PasskeyListing {
    /// The line for an empty listing.
    public static func empty(relyingParty: String?, hidden: Bool = false) -> String {
        let kind = hidden ? "hidden passkeys" : "passkeys"
        return relyingParty.map { "No \(kind) for \($0)." } ?? "No \(kind)."
    }

    /// Three lines per passkey of the index: site and account, credential ID, then what kind it is and its dates.
    public static func lines(
        _ identities: [CredentialIdentity], notes: [[UInt8]: String] = [:],
        links: [String: PasskeyEndpoints.ManageLink] = [:]
    ) -> [String] {
        let dates = ISO8601DateFormatter()
        return identities.flatMap { identity in
            var details = [identity.isDiscoverable ? "discoverable" : "server-side (needs allowList)"]
            details.append("created \(dates.string(from: identity.creationDate))")
            details.append(identity.lastUsedDate.map { "last used \(dates.string(from: $0))" } ?? "never used")
            if identity.rank != 0 { details.append("rank \(identity.rank)") }
            details += hiddenDetails(identity.hiddenDate, dates: dates)
            return [
                heading(identity.serviceIdentifier, identity.userName, identity.userDisplayName),
                "    id \(identity.credentialID.base64URLEncodedString)", "    " + details.joined(separator: ", "),
            ] + manageLines(links[identity.serviceIdentifier]) + NoteLines.lines(notes[identity.credentialID])
        }
    }

    /// The index's passkeys in the fields `--verify --json` uses for them (no public key: the index has none).
    public static func jsonObjects(
        _ identities: [CredentialIdentity], notes: [[UInt8]: String] = [:],
        links: [String: PasskeyEndpoints.ManageLink] = [:]
    ) -> [[String: Any]] {
        let dates = ISO8601DateFormatter()
        return identities.map { identity in
            var object: [String: Any] = [
                "rpId": identity.serviceIdentifier, "credentialId": identity.credentialID.base64URLEncodedString,
                "userHandle": identity.userHandle.base64URLEncodedString, "discoverable": identity.isDiscoverable,
                "created": dates.string(from: identity.creationDate), "rank": identity.rank, "damaged": false,
            ]
            object["userName"] = identity.userName
            object["userDisplayName"] = identity.userDisplayName
            object["lastUsed"] = identity.lastUsedDate.map { dates.string(from: $0) }
            object["note"] = notes[identity.credentialID]
            addHidden(identity.hiddenDate, to: &object, dates: dates)
            addManage(links[identity.serviceIdentifier], to: &object)
            return object
        }
    }

    /// The store's rows: three lines each. What a damaged row claims is unauthenticated: shown only to find it,
    /// escaped like the rest, with how to remove it.
    public static func lines(
        _ entries: [CredentialEntry], notes: [[UInt8]: String] = [:], links: [String: PasskeyEndpoints.ManageLink] = [:]
    ) -> [String] {
        let dates = ISO8601DateFormatter()
        return entries.flatMap { entry in
            switch entry {
            case .intact(let credential):
                var details = [credential.isDiscoverable ? "discoverable" : "server-side (needs allowList)"]
                details.append("created \(dates.string(from: credential.creationDate))")
                details.append("backup eligible \(credential.backupEligible ? "yes" : "no")")
                details += hiddenDetails(credential.hiddenDate, dates: dates)
                return [
                    heading(credential.relyingPartyID, credential.userName, credential.userDisplayName),
                    "    id \(credential.id.base64URLEncodedString)", "    " + details.joined(separator: ", "),
                ] + manageLines(links[credential.relyingPartyID]) + NoteLines.lines(notes[credential.id])
            case .damaged(let damaged):
                let claimed = [damaged.relyingPartyID, damaged.userName].compactMap { $0 }.joined(separator: "  ")
                return [
                    "DAMAGED  \(claimed.terminalSafe)", "    id \(damaged.id.base64URLEncodedString)",
                    "    \(reason(damaged.reason)); not used; remove it with `passkey delete`",
                ]
            }
        }
    }

    public static func jsonObjects(
        _ entries: [CredentialEntry], notes: [[UInt8]: String] = [:], links: [String: PasskeyEndpoints.ManageLink] = [:]
    ) -> [[String: Any]] {
        entries.map { entry in
            switch entry {
            case .intact(let credential):
                var object = jsonObject(credential).merging(
                    ["note": notes[credential.id]].compactMapValues { $0 }, uniquingKeysWith: { $1 })
                addManage(links[credential.relyingPartyID], to: &object)
                return object
            case .damaged(let damaged):
                return [
                    "credentialId": damaged.id.base64URLEncodedString, "damaged": true,
                    "problem": reason(damaged.reason),
                ].merging(
                    ["rpId": damaged.relyingPartyID, "userName": damaged.userName].compactMapValues { $0 },
                    uniquingKeysWith: { first, _ in first })
            }
        }
    }

    /// One intact passkey: its public key (COSE, base64url) but never its private key.
    public static func jsonObject(_ credential: StoredCredential) -> [String: Any] {
        var object: [String: Any] = [
            "rpId": credential.relyingPartyID, "credentialId": credential.id.base64URLEncodedString,
            "userHandle": credential.userHandle.base64URLEncodedString, "discoverable": credential.isDiscoverable,
            "backupEligible": credential.backupEligible, "backupState": credential.backupState,
            "created": ISO8601DateFormatter().string(from: credential.creationDate),
            "publicKey": credential.privateKey.publicKey.coseRepresentation.encoded()
                .base64URLEncodedString,
            "damaged": false,
        ]
        object["rpName"] = credential.relyingPartyName
        object["userName"] = credential.userName
        object["userDisplayName"] = credential.userDisplayName
        addHidden(credential.hiddenDate, to: &object, dates: ISO8601DateFormatter())
        return object
    }

    /// The line under a passkey that says where its site lets you manage it (`list --endpoints`); none when the site
    /// was not asked.
    static func manageLines(_ link: PasskeyEndpoints.ManageLink?) -> [String] {
        switch link {
        case nil: []
        case .manage(let url): ["    manage at \(url.terminalSafe)"]
        case .noManageURL: ["    the site's passkey endpoints name no manage URL"]
        case .notADomain: ["    no passkey endpoints: the RP ID is not a domain name"]
        case .unavailable(let reason): ["    no passkey endpoints: \(reason.terminalSafe)"]
        }
    }

    /// `manage` (the URL) or `manageUnavailable` (why not) in a passkey's JSON, when its site was asked.
    static func addManage(_ link: PasskeyEndpoints.ManageLink?, to object: inout [String: Any]) {
        switch link {
        case nil: break
        case .manage(let url): object["manage"] = url
        case .noManageURL: object["manageUnavailable"] = "the site's passkey endpoints name no manage URL"
        case .notADomain: object["manageUnavailable"] = "the RP ID is not a domain name"
        case .unavailable(let reason): object["manageUnavailable"] = reason
        }
    }

    /// When a signal hid the passkey, and when it is deleted: nothing for a shown one.
    static func hiddenDetails(_ hidden: Date?, dates: ISO8601DateFormatter) -> [String] {
        guard let hidden else { return [] }
        let deletion = hidden.addingTimeInterval(SQLiteCredentialStore.hiddenGracePeriod)
        return [
            "hidden by the site's signal \(dates.string(from: hidden)), deleted after \(dates.string(from: deletion)) "
                + "unless `passkey unhide`"
        ]
    }

    /// `hidden` and `deletedAfter` in a passkey's JSON, when a signal hid it.
    static func addHidden(_ hidden: Date?, to object: inout [String: Any], dates: ISO8601DateFormatter) {
        guard let hidden else { return }
        object["hidden"] = dates.string(from: hidden)
        object["deletedAfter"] = dates.string(
            from: hidden.addingTimeInterval(SQLiteCredentialStore.hiddenGracePeriod))
    }

    public static func reason(_ reason: DamagedCredential.Reason) -> String {
        switch reason {
        case .failsIntegrityCheck: "damaged: fails its integrity check (changed outside passkey, or disk damage)"
        case .missingFields: "damaged: required fields are missing"
        }
    }

    /// `site  name (display name)`, each part terminal-safe.
    static func heading(_ site: String, _ userName: String?, _ displayName: String?) -> String {
        let user = [userName, displayName.map { "(\($0))" }].compactMap { $0 }
        return "\(site.terminalSafe)  \(user.joined(separator: " ").terminalSafe)"
    }
}

/// JSON for standard output: pretty-printed with sorted keys, as every `--json` of `list` and `inspect` prints it.
public enum JSONOutput {
    /// A value built with the `JSON` module, laid out two spaces deep (its objects are sorted where they are built).
    public static func text(_ value: JSONValue) -> String {
        String(decoding: value.serialized(.pretty), as: UTF8.self)
    }

    public static func text(_ value: Any) -> String {
        // Only dictionaries and arrays of strings, numbers and Booleans reach here: serialization cannot fail.
        let data =
            (try? JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted, .sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
