import Foundation
import RelyingParty
import WebAuthnClient

/// The RP ID check tests inject into the WebAuthn engine: the RP ID is the origin's host unless one is asked for, and
/// this package's `OriginCheck` (no Public Suffix List) decides. A refusal is `SecurityError`, as a browser's.
public struct HostRelyingPartyIDChecker: RelyingPartyIDChecker {
    public init() {}

    public func check(origin: String, requested: String?) async throws(ClientError) -> RelyingPartyIDDecision {
        let rpID = requested ?? URLComponents(string: origin)?.host ?? ""
        do {
            return RelyingPartyIDDecision(
                origin: try OriginCheck.validate(relyingPartyID: rpID, origin: origin), relyingPartyID: rpID)
        } catch {
            throw ClientError(.relyingPartyIDRefused(error.description))
        }
    }
}
