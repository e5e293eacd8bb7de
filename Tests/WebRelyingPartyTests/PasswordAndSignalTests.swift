import Basics
import Foundation
import JSON
import RelyingParty
import RelyingPartyTestSupport
import Testing
import WebAuthn
import WebRelyingParty

/// Issue 27, the relying party's side: password sign-up and sign-in, the automatic passkey upgrade it offers
/// (`create()` with `mediation: "conditional"`, accepted without UP for that ceremony only), renaming an account,
/// and the Signal API's arguments in the answers.
extension SiteTests {
    static let password = "correct horse battery staple"

    /// Signs `user` up with ``password``; returns the session cookie.
    mutating func signUp(_ user: String, randomByte: UInt8 = 0x21) throws -> String {
        let answer = send(
            "POST", "/password/sign-up", json: #"{"username":"\#(user)","password":"\#(Self.password)"}"#,
            randomByte: randomByte)
        #expect(answer.response.status == 200)
        #expect(answer.line == "verdict password sign-up ok user=\(user)")
        site.commit(try #require(answer.stateToSave))
        return String(try #require(answer.response.header("Set-Cookie")).prefix { $0 != ";" })
    }

    @Test mutating func aPasswordSignInOffersAnUpgradeThatIsAcceptedWithoutUserPresence() throws {
        _ = try signUp("alice")
        let record = try #require(site.state.user(rpID: "localhost", userName: "alice"))
        let hash = try #require(record.password)
        #expect(hash.kdf == "scrypt" && hash.rounds == 1 << 14 && hash.blockSize == 8 && hash.parallelism == 1)
        #expect(hash.salt.count == 16 && hash.hash.count == 32)
        // Nothing of the password is kept, in the record or in the state file's JSON.
        let stateJSON = String(decoding: try site.state.jsonData(), as: UTF8.self)
        #expect(!stateJSON.contains(Self.password) && !stateJSON.contains("horse"))
        #expect(stateJSON.contains(#""users""#))

        let signedIn = send(
            "POST", "/password/sign-in", json: #"{"username":"alice","password":"\#(Self.password)"}"#,
            randomByte: 0x22)
        #expect(signedIn.response.status == 200 && signedIn.stateToSave == nil)
        #expect(signedIn.line == "verdict password sign-in ok user=alice")
        let cookie = String(try #require(signedIn.response.header("Set-Cookie")).prefix { $0 != ";" })
        let answer = try object(signedIn.response.body)
        #expect(answer["verdict"] as? String == "ok" && answer["user"] as? String == "alice")
        let upgrade = try #require(answer["upgrade"] as? [String: Any])
        let selection = try #require(upgrade["authenticatorSelection"] as? [String: Any])
        #expect(selection["residentKey"] as? String == "required" && selection["requireResidentKey"] as? Bool == true)
        #expect(selection["userVerification"] as? String == "preferred")
        let user = try #require(upgrade["user"] as? [String: Any])
        #expect(user["name"] as? String == "alice")
        #expect(user["id"] as? String == record.userHandle.base64URLEncodedString)
        let signals = try #require(answer["signals"] as? [String: Any])
        #expect(signals["rpId"] as? String == "localhost" && signals["name"] as? String == "alice")
        #expect(signals["userId"] as? String == record.userHandle.base64URLEncodedString)
        #expect(signals["allAcceptedCredentialIds"] as? [String] == [])
        #expect(site.sessions.userName(cookieHeader: cookie, now: now) == "alice")

        // The password manager's passkey: no user presence, as a conditional create may be made.
        var key = SoftwareAuthenticator(origin: Harness.origin)
        var spoil = SoftwareAuthenticator.Spoil()
        spoil.flags = [.backupEligible, .backupState]
        let upgradeJSON = try JSONSerialization.data(withJSONObject: upgrade)
        let response = try key.register(optionsJSON: Array(upgradeJSON), spoil: spoil)
        let registered = send("POST", "/registration/verify", json: String(decoding: response, as: UTF8.self))
        #expect(registered.response.status == 200)
        let line = try #require(registered.line)
        #expect(line.hasPrefix("verdict registration ok user=alice credential="))
        #expect(line.hasSuffix(" upgrade=true up=false"))
        let verdict = try object(registered.response.body)
        #expect(verdict["upgrade"] as? Bool == true && verdict["userPresent"] as? Bool == false)
        let newState = try #require(registered.stateToSave)
        site.commit(newState)
        let account = try #require(site.state.accounts(for: "localhost").first)
        #expect(account.userName == "alice" && account.credential.userHandle == record.userHandle)

        // Every other check stays: a second upgrade answered for another RP ID is refused.
        let again = send(
            "POST", "/password/sign-in", json: #"{"username":"alice","password":"\#(Self.password)"}"#,
            randomByte: 0x23)
        let options = try #require(try object(again.response.body)["upgrade"] as? [String: Any])
        #expect((options["excludeCredentials"] as? [[String: Any]])?.count == 1)
        var other = SoftwareAuthenticator(origin: Harness.origin)
        spoil.rpID = "example.com"
        let wrong = try other.register(
            optionsJSON: Array(try JSONSerialization.data(withJSONObject: options)), spoil: spoil)
        let refused = send("POST", "/registration/verify", json: String(decoding: wrong, as: UTF8.self))
        #expect(refused.response.status == 400 && refused.stateToSave == nil)
        #expect(try object(refused.response.body)["error"] as? String == "rpIDHashMismatch")
    }

    @Test mutating func anOrdinaryRegistrationStillNeedsUserPresence() throws {
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let options = send("POST", "/registration/options", json: #"{"username":"bob"}"#)
        var spoil = SoftwareAuthenticator.Spoil()
        spoil.flags = [.userVerified, .backupEligible, .backupState]
        let response = try key.register(optionsJSON: options.response.body, spoil: spoil)
        let refused = send("POST", "/registration/verify", json: String(decoding: response, as: UTF8.self))
        #expect(refused.response.status == 400 && refused.stateToSave == nil)
        #expect(try object(refused.response.body)["error"] as? String == "userNotPresent")
        #expect(refused.line?.hasPrefix("verdict registration refused code=userNotPresent user=bob") == true)
    }

    /// No user enumeration: a wrong password, an unknown user and a user with a passkey but no password get the
    /// same answer, after the same scrypt work.
    @Test mutating func aWrongPasswordAndAnUnknownUserGetTheSameAnswerInTheSameTime() throws {
        _ = try signUp("alice")
        var key = SoftwareAuthenticator(origin: Harness.origin)
        _ = try register("bob", with: &key, randomByte: 0x31)
        var bodies: Set<[UInt8]> = []
        var lines: Set<String> = []
        var times: [String: Duration] = [:]
        for (name, body) in [
            ("wrong password", #"{"username":"alice","password":"wrong horse battery staple"}"#),
            ("unknown user", #"{"username":"mallory","password":"correct horse battery staple"}"#),
            ("passkey only", #"{"username":"bob","password":"correct horse battery staple"}"#),
        ] {
            var exchange: RelyingPartySite.Exchange? = nil
            let clock = ContinuousClock()
            let elapsed = clock.measure {
                for _ in 0..<3 { exchange = send("POST", "/password/sign-in", json: body) }
            }
            let answer = try #require(exchange)
            #expect(answer.response.status == 400 && answer.stateToSave == nil, "\(name)")
            #expect(answer.response.header("Set-Cookie") == nil, "\(name)")
            bodies.insert(answer.response.body)
            lines.insert(answer.line ?? "")
            times[name] = elapsed
        }
        #expect(bodies.count == 1 && lines.count == 1)
        #expect(try object(try #require(bodies.first))["error"] as? String == "signInFailed")
        #expect(
            lines.first
                == "verdict password sign-in refused code=signInFailed reason=the user name or the password is wrong")
        let fastest = try #require(times.values.min())
        let slowest = try #require(times.values.max())
        #expect(slowest < fastest * 3, "\(times)")
        #expect(fastest > .milliseconds(3), "each check runs scrypt: \(times)")
    }

    @Test mutating func signUpRefusesATakenNameAndAShortPasswordWithoutSayingThePassword() throws {
        var key = SoftwareAuthenticator(origin: Harness.origin)
        _ = try register("bob", with: &key, randomByte: 0x41)
        _ = try signUp("alice")
        let before = site.state
        for user in ["alice", "bob"] {
            let taken = send(
                "POST", "/password/sign-up", json: #"{"username":"\#(user)","password":"another password"}"#)
            #expect(taken.response.status == 409 && taken.stateToSave == nil)
            #expect(try object(taken.response.body)["error"] as? String == "userExists")
        }
        let short = send("POST", "/password/sign-up", json: #"{"username":"carol","password":"s3cr3t!"}"#)
        #expect(short.response.status == 400 && short.stateToSave == nil)
        let message = try #require(try object(short.response.body)["message"] as? String)
        #expect(message == "password: must be 8 to 256 characters" && !message.contains("s3cr3t"))
        #expect(site.state == before)
        // A user with a password and no passkey: adding one takes a session of that user.
        let options = send("POST", "/registration/options", json: #"{"username":"alice"}"#)
        #expect(options.response.status == 403)
    }

    /// Hostile bodies for every new endpoint: a clear 400, nothing changed, no password in the answer.
    @Test(arguments: ["/password/sign-up", "/password/sign-in", "/account/rename"])
    mutating func hostileBodiesAreRefusedAndChangeNothing(path: String) throws {
        let cookie = try signUp("alice")
        let before = site.state
        let secret = "Hunter2-hunter2"
        let long = String(repeating: "p", count: 257)
        for body in [
            "", "{", "[]", "null", "\"alice\"", "42", #"{"username":1}"#, #"{"username":null,"password":"x"}"#,
            #"{"username":"a b","password":"\#(secret)","displayName":"x"}"#,
            #"{"username":"","password":"\#(secret)"}"#,
            #"{"username":"alice"}"#, #"{"username":"alice","password":["\#(secret)"]}"#,
            #"{"username":"alice","password":"\#(long)"}"#,
            #"{"username":"alice","displayName":"\u0007bell","password":"\#(secret)"}"#,
            #"{"username":"alice","displayName":{},"password":"\#(secret)"}"#,
            #"{"username":"\#(String(repeating: "a", count: 65))","password":"\#(secret)","displayName":"x"}"#,
            #"{"username":"alice","displayName":"   ","password":"\#(secret)"}"#, "{\"username\":\"alice\u{0}\"}",
        ] {
            let answer = send("POST", path, json: body, cookie: cookie)
            #expect(answer.response.status == 400, "\(path) \(body)")
            let text = String(decoding: answer.response.body, as: UTF8.self)
            let code = try object(answer.response.body)["error"] as? String
            #expect(
                code == "badJSON" || code == "invalidRequest"
                    || (path == "/password/sign-in" && code == "signInFailed"), "\(path) \(body): \(text)")
            #expect(!text.contains(secret) && !text.contains(long), "\(path) \(body)")
            #expect(answer.stateToSave == nil && answer.response.header("Set-Cookie") == nil, "\(path) \(body)")
            #expect(!(answer.line ?? "").contains(secret))
        }
        #expect(site.state == before)
        #expect(site.relyingParty.pendingCount == 0)
    }

    @Test mutating func aSignedInUserRenamesTheAccountAndSignInsCarryTheNewNames() throws {
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let options = send(
            "POST", "/registration/options", json: #"{"username":"alice","displayName":"Alice L"}"#, randomByte: 0x51)
        let registration = send(
            "POST", "/registration/verify",
            json: String(decoding: try key.register(optionsJSON: options.response.body), as: UTF8.self),
            randomByte: 0x52)
        site.commit(try #require(registration.stateToSave))
        let cookie = String(try #require(registration.response.header("Set-Cookie")).prefix { $0 != ";" })
        // The display name given at registration is kept.
        #expect(site.state.user(rpID: "localhost", userName: "alice")?.displayName == "Alice L")

        // A sign-in's answer: what signalAllAcceptedCredentials and signalCurrentUserDetails take.
        let request = send("POST", "/authentication/options", json: "{}")
        let assertion = try key.authenticate(optionsJSON: request.response.body)
        let signedIn = send("POST", "/authentication/verify", json: String(decoding: assertion, as: UTF8.self))
        let signals = try #require(try object(signedIn.response.body)["signals"] as? [String: Any])
        let handle = try #require(key.userHandle).base64URLEncodedString
        #expect(signals["rpId"] as? String == "localhost" && signals["userId"] as? String == handle)
        #expect(signals["name"] as? String == "alice" && signals["displayName"] as? String == "Alice L")
        #expect(signals["allAcceptedCredentialIds"] as? [String] == [key.credentialID.base64URLEncodedString])
        site.commit(try #require(signedIn.stateToSave))

        // Nobody else renames alice.
        let bob = try signUp("bob")
        let before = site.state
        for other in [nil, bob, "passkey-rp-session=forged"] {
            let refused = send(
                "POST", "/account/rename", json: #"{"username":"alice","displayName":"Mallory"}"#, cookie: other)
            #expect(refused.response.status == 403 && refused.stateToSave == nil, "\(other ?? "no cookie")")
        }
        #expect(site.state == before)

        let renamed = send(
            "POST", "/account/rename", json: #"{"username":"alice","displayName":"Alice Liddell"}"#, cookie: cookie)
        #expect(renamed.response.status == 200)
        #expect(renamed.line == "verdict rename ok user=alice displayName=Alice%20Liddell")
        let answer = try object(renamed.response.body)
        #expect(answer["renamed"] as? String == "alice" && answer["displayName"] as? String == "Alice Liddell")
        let renamedSignals = try #require(answer["signals"] as? [String: Any])
        #expect(
            renamedSignals["displayName"] as? String == "Alice Liddell" && renamedSignals["userId"] as? String == handle
        )
        site.commit(try #require(renamed.stateToSave))
        #expect(site.state.user(rpID: "localhost", userName: "alice")?.displayName == "Alice Liddell")
        let credentials = try object(send("GET", "/credentials", cookie: cookie).response.body)
        #expect((credentials["accounts"] as? [[String: Any]])?.first?["displayName"] as? String == "Alice Liddell")
        #expect(credentials["signedIn"] as? String == "alice")
        // A new passkey for alice gets the new display name and the same user handle.
        let more = try object(
            send("POST", "/registration/options", json: #"{"username":"alice"}"#, cookie: cookie).response.body)
        let user = try #require(more["user"] as? [String: Any])
        #expect(user["displayName"] as? String == "Alice Liddell" && user["id"] as? String == handle)
    }

    @Test mutating func aDeletionsAnswerNamesTheRelyingPartyForSignalUnknownCredential() throws {
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let cookie = try register("alice", with: &key, randomByte: 0x61)
        let deleted = send(
            "POST", "/credentials/delete", json: #"{"credentialId":"\#(key.credentialID.base64URLEncodedString)"}"#,
            cookie: cookie)
        #expect(deleted.response.status == 200)
        #expect(try object(deleted.response.body)["rpId"] as? String == "localhost")
    }

    @Test func theUsersRoundTripThroughTheStateJSONAndAnOldFileStillReads() throws {
        var state = RelyingPartyState()
        state.set(
            RelyingPartyState.User(
                rpID: "localhost", userName: "alice", displayName: "Alice", userHandle: [1, 2, 3],
                password: PasswordSignIn.hash("a password", salt: Array(repeating: 7, count: 16))))
        let data = try state.jsonData()
        #expect(try RelyingPartyState(jsonData: data, source: "test") == state)
        #expect(PasswordSignIn.matches("a password", state.users.first?.password))
        #expect(!PasswordSignIn.matches("a passworD", state.users.first?.password))
        #expect(!PasswordSignIn.matches("a password", nil))
        let old = Data(#"{"version":1,"accounts":[]}"#.utf8)
        #expect(try RelyingPartyState(jsonData: old, source: "test") == RelyingPartyState())
        #expect(!String(decoding: try RelyingPartyState().jsonData(), as: UTF8.self).contains("users"))
        let weak = Data(
            #"{"version":1,"accounts":[],"users":[{"rpID":"l","userName":"a","userHandle":"AQ","password":{"kdf":"md5","rounds":1,"blockSize":1,"parallelism":1,"salt":"AQ","hash":"AQ"}}]}"#
                .utf8)
        #expect(throws: RelyingPartyStateError.self) { try RelyingPartyState(jsonData: weak, source: "test") }
    }
}
