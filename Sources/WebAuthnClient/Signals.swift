import Basics
import Foundation
import JSON

/// The three signal methods of WebAuthn Level 3 (§5.1.10): a relying party tells the client what it knows of its
/// credentials, and the client passes it on to the credential's provider. This is the decision, with no store: the
/// options read from the JSON a page passes (§5.1.10 steps 1–3, as `TypeError`s), and what the provider does with
/// the credentials it holds (the authenticator actions of §5.1.10.1–3). The promise a page gets resolves the same way
/// whatever the provider holds, so that a signal cannot be used to learn which credentials are here.
public enum CredentialSignal: Hashable, Sendable {
    /// `signalUnknownCredential({rpId, credentialId})`: the relying party does not accept this credential (it
    /// deleted it, or never had it).
    case unknownCredential(rpID: String, credentialID: [UInt8])
    /// `signalAllAcceptedCredentials({rpId, userId, allAcceptedCredentialIds})`: every credential the relying party
    /// still accepts for this user.
    case allAcceptedCredentials(rpID: String, userHandle: [UInt8], credentialIDs: [[UInt8]])
    /// `signalCurrentUserDetails({rpId, userId, name, displayName})`: the user's current names.
    case currentUserDetails(rpID: String, userHandle: [UInt8], name: String, displayName: String)

    /// Which method, as `passkey client signal` names it.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        case unknown, accepted, details
    }

    /// The most credential IDs an `allAcceptedCredentialIds` may list.
    public static let maximumAcceptedCredentials = 1000

    /// The relying party ID the signal is for, to check against the caller's origin as `create()` and `get()` check
    /// theirs (§5.1.10 step 4).
    public var relyingPartyID: String {
        switch self {
        case .unknownCredential(let rpID, _), .allAcceptedCredentials(let rpID, _, _),
            .currentUserDetails(let rpID, _, _, _):
            rpID
        }
    }

    /// Reads the options of `kind` from the JSON a page would pass. A missing member, a member of the wrong type and
    /// an ID that is not base64url are each a `TypeError` (§5.1.10: "if … base64url decoding … is failure, reject
    /// with TypeError"), named by its path.
    public init(kind: Kind, json: [UInt8]) throws(ClientError) {
        let options = try JSONDictionary(try JSONValue(parsingOptions: json), path: "")
        let rpID = try options.requiredString("rpId")
        switch kind {
        case .unknown:
            self = .unknownCredential(rpID: rpID, credentialID: try Self.id(options, "credentialId"))
        case .accepted:
            let userHandle = try Self.id(options, "userId", maximum: 64)
            guard
                let elements = try options.array(
                    "allAcceptedCredentialIds", maximumCount: Self.maximumAcceptedCredentials)
            else { throw ClientError(.missingMember("allAcceptedCredentialIds")) }
            var ids: [[UInt8]] = []
            for element in elements { ids.append(try Self.id(element.value, path: element.path, maximum: 1023)) }
            self = .allAcceptedCredentials(rpID: rpID, userHandle: userHandle, credentialIDs: ids)
        case .details:
            self = .currentUserDetails(
                rpID: rpID, userHandle: try Self.id(options, "userId", maximum: 64),
                name: try options.requiredString("name"), displayName: try options.requiredString("displayName"))
        }
    }

    private static func id(_ options: JSONDictionary, _ key: String, maximum: Int = 1023) throws(ClientError)
        -> [UInt8]
    {
        try id(try options.required(key), path: options.name(key), maximum: maximum)
    }

    private static func id(_ value: JSONValue, path: String, maximum: Int) throws(ClientError) -> [UInt8] {
        let text = try JSONDictionary.string(value, path: path, maximumBytes: (maximum + 2) / 3 * 4 + 2)
        guard let bytes = [UInt8](base64URLEncoded: text), (1...maximum).contains(bytes.count) else {
            throw ClientError(.wrongType(path, expected: "base64url of 1 to \(maximum) bytes"))
        }
        return bytes
    }
}

/// One credential a provider holds, as a signal sees it.
public struct SignalCredential: Hashable, Sendable {
    public var credentialID: [UInt8]
    public var relyingPartyID: String
    public var userHandle: [UInt8]
    public var userName: String?
    public var userDisplayName: String?
    /// Hidden by an earlier signal: not offered, and deleted once its grace period ends.
    public var isHidden: Bool

    public init(
        credentialID: [UInt8], relyingPartyID: String, userHandle: [UInt8], userName: String?,
        userDisplayName: String?, isHidden: Bool
    ) {
        self.credentialID = credentialID
        self.relyingPartyID = relyingPartyID
        self.userHandle = userHandle
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.isHidden = isHidden
    }
}

/// What a provider does to one credential for a signal.
public enum SignalAction: Hashable, Sendable {
    /// Stop offering it (choosers, `passkey list`); it can be restored until its grace period ends.
    case hide(credentialID: [UInt8])
    /// Offer it again: the relying party accepts it after all.
    case unhide(credentialID: [UInt8])
    /// Show the account under its current names.
    case rename(credentialID: [UInt8], name: String, displayName: String)
}

extension CredentialSignal {
    /// The authenticator actions (§5.1.10.1–3) on `credentials`: only credentials of the signal's relying party
    /// (and user) are touched, and nothing is done that is already done, so a signal for credentials the provider
    /// does not hold gives no action at all.
    /// - unknown credential: that credential is hidden.
    /// - all accepted credentials: the user's credentials not listed are hidden, listed ones that were hidden are
    ///   shown again.
    /// - current user details: the user's credentials are renamed where a name differs.
    public func actions(on credentials: [SignalCredential]) -> [SignalAction] {
        switch self {
        case .unknownCredential(let rpID, let credentialID):
            return credentials.filter { $0.relyingPartyID == rpID && $0.credentialID == credentialID && !$0.isHidden }
                .map { .hide(credentialID: $0.credentialID) }
        case .allAcceptedCredentials(let rpID, let userHandle, let accepted):
            let acceptedIDs = Set(accepted)
            return credentials.filter { $0.relyingPartyID == rpID && $0.userHandle == userHandle }.compactMap {
                credential in
                let isAccepted = acceptedIDs.contains(credential.credentialID)
                if !isAccepted && !credential.isHidden { return .hide(credentialID: credential.credentialID) }
                if isAccepted && credential.isHidden { return .unhide(credentialID: credential.credentialID) }
                return nil
            }
        case .currentUserDetails(let rpID, let userHandle, let name, let displayName):
            return credentials.filter {
                $0.relyingPartyID == rpID && $0.userHandle == userHandle
                    && ($0.userName != name || $0.userDisplayName != displayName)
            }.map { .rename(credentialID: $0.credentialID, name: name, displayName: displayName) }
        }
    }
}

/// Automatic passkey upgrades: `create()` with `mediation: "conditional"` (WebAuthn L3 §5.1.3, conditional
/// mediation for registration) makes a passkey without any dialog only right after this provider filled the same
/// account's password, and otherwise fails as if nobody answered (the page learns nothing).
public enum ConditionalCreate {
    /// How recent the password fill must be. Chrome ("the password was used recently") and Apple ("immediately after
    /// a sign-in with a saved password") publish no number; five minutes covers a sign-in with a second factor and
    /// is short enough that a page cannot make a passkey long after the person left it.
    public static let window: TimeInterval = 5 * 60
    /// A clock that runs a little ahead of the fill's record is tolerated, never more.
    public static let clockSkew: TimeInterval = 5

    /// A password this provider filled: the login's service host and user name, and when.
    public struct PasswordFill: Hashable, Sendable {
        public var host: String
        public var userName: String
        public var date: Date

        public init(host: String, userName: String, date: Date) {
            self.host = host
            self.userName = userName
            self.date = date
        }
    }

    /// Whether a conditional `create()` for `userName` at `rpID` may make a passkey now: a password of that user
    /// for the RP ID (its host is the RP ID or under it, as a password saved for `login.example.com` serves the RP
    /// ID `example.com`) was filled within ``window`` before `now`, and the provider holds no passkey (hidden or
    /// not) for that user and RP ID yet.
    public static func allows(
        rpID: String, userName: String, fills: [PasswordFill], passkeys: [SignalCredential], now: Date
    ) -> Bool {
        let rpID = rpID.lowercased()
        let recentFill = fills.contains { fill in
            let host = fill.host.lowercased()
            let age = now.timeIntervalSince(fill.date)
            return (host == rpID || host.hasSuffix("." + rpID)) && fill.userName == userName
                && age >= -clockSkew && age <= window
        }
        let alreadyHasPasskey = passkeys.contains {
            $0.relyingPartyID.lowercased() == rpID && $0.userName == userName
        }
        return recentFill && !alreadyHasPasskey
    }
}
