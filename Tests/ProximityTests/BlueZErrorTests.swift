import Glibc
import Testing

@testable import Proximity
@testable import ProximityIO

/// The errors users see when the radio cannot be opened or used: each says what to do next.
struct BlueZErrorTests {
    static let errnoMessages: [(Int32, String)] = [
        (EAFNOSUPPORT, "this kernel has no Bluetooth support (AF_BLUETOOTH); use --ble sim to use the simulated radio"),
        (
            ENODEV,
            "no Bluetooth adapter hci1 (`hciconfig` or `btmgmt info` lists the adapters); use --ble sim to use the simulated radio"
        ),
        (
            ERFKILL,
            "Bluetooth adapter hci1 is blocked by rfkill: `rfkill unblock bluetooth`; or use --ble sim to use the simulated radio"
        ),
        (
            EBUSY,
            "Bluetooth adapter hci1 is held exclusively by another program (HCI user channel); or use --ble sim to use the simulated radio"
        ),
        (
            ENETDOWN,
            "Bluetooth adapter hci1 is down: `sudo hciconfig hci1 up`; or use --ble sim to use the simulated radio"
        ),
    ]

    @Test(arguments: errnoMessages) func openErrorsSayWhatToDo(code: Int32, message: String) {
        #expect(throws: ProximityError.unavailable(message)) {
            try BlueZAdvertiser(adapter: 1, options: BlueZOptions()) { _ throws(HCISocketError) in
                throw HCISocketError(call: "bind", code: code)
            }
        }
        #expect(throws: ProximityError.unavailable(message)) {
            try BlueZScanner(adapter: 1, options: BlueZOptions()) { _ throws(HCISocketError) in
                throw HCISocketError(call: "socket", code: code)
            }
        }
    }

    @Test(arguments: [EPERM, EACCES]) func missingCapabilitiesSayWhatToDo(code: Int32) throws {
        let error = #expect(throws: ProximityError.self) {
            try BlueZScanner(adapter: 2, options: BlueZOptions()) { _ throws(HCISocketError) in
                throw HCISocketError(call: "ioctl(HCIDEVUP)", code: code)
            }
        }
        guard case .unavailable(let text) = try #require(error) else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        #expect(text.hasPrefix("Bluetooth adapter hci2 through a raw HCI socket needs CAP_NET_RAW and CAP_NET_ADMIN"))
        #expect(text.contains("run as root or `sudo setcap cap_net_raw,cap_net_admin+ep /"))
        #expect(
            text.hasSuffix(
                "; or --ble hci:2 through bluetoothd, which needs neither; or use --ble sim to use the simulated radio")
        )
    }

    @Test func permissionRefusedOnWriteSaysWhatToDo() async throws {
        let socket = FakeHCISocket()
        socket.failWrites(EPERM)
        let error = await #expect(throws: ProximityError.self) {
            try await BlueZRadioTests.advertiser(socket).startAdvertising(BlueZRadioTests.advert)
        }
        #expect(error?.description.contains("needs CAP_NET_RAW and CAP_NET_ADMIN") == true)
    }

    @Test func otherErrnoIsAFailure() {
        #expect(throws: ProximityError.failed("bind on hci0 failed: invalid argument")) {
            try BlueZAdvertiser(adapter: 0, options: BlueZOptions()) { _ throws(HCISocketError) in
                throw HCISocketError(call: "bind", code: EINVAL)
            }
        }
    }

    @Test func adapterOutOfRange() {
        #expect(
            throws: ProximityError.unavailable(
                "no Bluetooth adapter hci65535; use --ble sim to use the simulated radio")
        ) {
            try BlueZAdvertiser(adapter: 65535, options: BlueZOptions()) { _ throws(HCISocketError) in FakeHCISocket() }
        }
    }

    /// The real socket on this machine, no fake: a kernel without Bluetooth (no /sys/class/bluetooth) must give the
    /// EAFNOSUPPORT message; a kernel with Bluetooth but no hci0 the "no adapter" one.
    @Test(.enabled(if: access("/sys/class/bluetooth/hci0", F_OK) != 0, "hci0 exists: only error paths are checked"))
    func realSocketOnThisMachine() {
        let kernelHasBluetooth = access("/sys/class/bluetooth", F_OK) == 0
        let expected =
            kernelHasBluetooth
            ? ProximityError.unavailable(
                "no Bluetooth adapter hci0 (`hciconfig` or `btmgmt info` lists the adapters); use --ble sim to use the simulated radio"
            )
            : .unavailable(
                "this kernel has no Bluetooth support (AF_BLUETOOTH); use --ble sim to use the simulated radio")
        #expect(throws: expected) { _ = try BlueZRadio.advertiser(adapter: 0) }
        #expect(throws: expected) { _ = try BlueZRadio.scanner(adapter: 0) }
        #expect(ProximityMode(argument: "hci") == .hci(adapter: 0))
    }
}
