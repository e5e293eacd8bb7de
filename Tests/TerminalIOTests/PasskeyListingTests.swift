import Basics
import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Testing

@testable import TerminalIO

/// `passkey list`, text and JSON, from the index and (`--verify`) from the store's rows.
struct PasskeyListingTests {
    static let created = Date(timeIntervalSince1970: 1_700_000_000)  // 2023-11-14T22:13:20Z
    static let hostile = "x\r\u{1B}[2Kbank.example\u{202E}"

    static func identity(name: String = "alice", display: String? = "Alice", discoverable: Bool = true)
        -> CredentialIdentity
    {
        CredentialIdentity(
            serviceIdentifier: "example.com", userName: name, userDisplayName: display, credentialID: [0xFB, 0xFF],
            userHandle: [1, 2], isDiscoverable: discoverable, creationDate: created)
    }

    @Test func theIndexShowsThreeLinesPerPasskey() {
        var used = Self.identity(discoverable: false)
        used.lastUsedDate = Self.created.addingTimeInterval(60)
        used.rank = 2
        #expect(
            PasskeyListing.lines([Self.identity(display: nil), used]) == [
                "example.com  alice", "    id -_8", "    discoverable, created 2023-11-14T22:13:20Z, never used",
                "example.com  alice (Alice)", "    id -_8",
                "    server-side (needs allowList), created 2023-11-14T22:13:20Z, last used 2023-11-14T22:14:20Z, rank 2",
            ])
        #expect(PasskeyListing.empty(relyingParty: nil) == "No passkeys.")
        #expect(PasskeyListing.empty(relyingParty: "example.com") == "No passkeys for example.com.")
    }

    /// A name a site chose reaches the terminal escaped (issue 10, defect 5), in the index and in the rows.
    @Test func siteChosenNamesAreEscaped() throws {
        let heading = try #require(PasskeyListing.lines([Self.identity(name: Self.hostile, display: nil)]).first)
        #expect(heading == "example.com  x\\u{D}\\u{1B}[2Kbank.example\\u{202E}")
        let damaged = DamagedCredential(id: [1], relyingPartyID: Self.hostile, userName: nil, reason: .missingFields)
        #expect(PasskeyListing.lines([.damaged(damaged)]).first == "DAMAGED  x\\u{D}\\u{1B}[2Kbank.example\\u{202E}")
    }

    @Test func theIndexAsJSONLeavesOutWhatIsAbsent() throws {
        var used = Self.identity()
        used.lastUsedDate = Self.created
        let objects = PasskeyListing.jsonObjects([Self.identity(display: nil), used])
        #expect(objects[0]["userDisplayName"] == nil && objects[0]["lastUsed"] == nil)
        #expect(objects[1]["lastUsed"] as? String == "2023-11-14T22:13:20Z")
        #expect(objects[1]["credentialId"] as? String == "-_8" && objects[1]["userHandle"] as? String == "AQI")
        #expect(objects[1]["damaged"] as? Bool == false && objects[1]["rank"] as? Int == 0)
        let parsed = try JSONSerialization.jsonObject(with: Data(JSONOutput.text(objects).utf8)) as? [[String: Any]]
        #expect(parsed?.count == 2)
    }

    @Test func theRowsShowDamageAndHowToRemoveIt() throws {
        let key = P256.Signing.PrivateKey()
        let credential = StoredCredential(
            id: [0xFB, 0xFF], relyingPartyID: "example.com", relyingPartyName: "Example", userHandle: [1],
            userName: "alice", userDisplayName: nil, privateKey: key, isDiscoverable: true, backupEligible: true,
            backupState: false, creationDate: Self.created)
        let damaged = DamagedCredential(
            id: [0xAB], relyingPartyID: "example.com", userName: "bob", reason: .failsIntegrityCheck)
        #expect(
            PasskeyListing.lines([.intact(credential), .damaged(damaged)]) == [
                "example.com  alice", "    id -_8",
                "    discoverable, created 2023-11-14T22:13:20Z, backup eligible yes",
                "DAMAGED  example.com  bob", "    id qw",
                "    damaged: fails its integrity check (changed outside passkey, or disk damage); not used; "
                    + "remove it with `passkey delete`",
            ])
        let objects = PasskeyListing.jsonObjects([.intact(credential), .damaged(damaged)])
        // The public key as COSE, never the private key.
        let text = JSONOutput.text(objects)
        #expect(!text.contains(key.rawRepresentation.base64URLEncodedString()) && !text.contains("privateKey"))
        #expect(objects[0]["rpName"] as? String == "Example" && objects[0]["backupEligible"] as? Bool == true)
        #expect(objects[0]["publicKey"] is String)
        #expect(objects[1]["damaged"] as? Bool == true && objects[1]["userName"] as? String == "bob")
        #expect(objects[1]["problem"] as? String == PasskeyListing.reason(.failsIntegrityCheck))
        let unnamed = PasskeyListing.jsonObjects([
            .damaged(DamagedCredential(id: [1], relyingPartyID: nil, userName: nil, reason: .missingFields))
        ])
        #expect(Set(unnamed[0].keys) == ["credentialId", "damaged", "problem"])
    }
}

extension Data {
    fileprivate func base64URLEncodedString() -> String { Array(self).base64URLEncodedString }
}
