import Proximity
import Synchronization

/// Timing for the BlueZ backend. Intervals are in the controller's units of 0.625 ms.
public struct BlueZOptions: Hashable, Sendable {
    /// How often the advert is sent: 0x00A0 (100 ms) by default, the shortest interval a non-connectable advert may
    /// use on controllers before Bluetooth 5.0. Valid: 0x00A0–0x4000.
    public var advertisingInterval: UInt16 = 0x00A0
    /// How often a scan starts: 0x0010 (10 ms) by default, as `hcitool lescan` uses.
    public var scanInterval: UInt16 = 0x0010
    /// How long each scan listens; equal to the interval by default, so that the controller listens all the time.
    public var scanWindow: UInt16 = 0x0010
    /// How long the controller may take to answer a command.
    public var commandTimeout: Duration = .seconds(2)

    /// The defaults above.
    public init() {}
}

/// Opens the BlueZ backend for `--ble hci[:N]`.
public enum BlueZRadio {
    /// An advertiser on adapter `hciN`. Throws `ProximityError.unavailable` when this kernel has no Bluetooth, the
    /// adapter does not exist, or the process lacks CAP_NET_RAW and CAP_NET_ADMIN; the message says what to do.
    public static func advertiser(adapter: Int, options: BlueZOptions = BlueZOptions()) throws(ProximityError)
        -> any ProximityAdvertiser
    {
        try BlueZAdvertiser(adapter: adapter, options: options)
    }

    /// A scanner on adapter `hciN`; it throws as `advertiser(adapter:options:)` does.
    public static func scanner(adapter: Int, options: BlueZOptions = BlueZOptions()) throws(ProximityError)
        -> any ProximityScanner
    {
        try BlueZScanner(adapter: adapter, options: options)
    }

    /// Opens the socket through `open`, mapping its failure to the error users see.
    static func controller(
        adapter: Int, options: BlueZOptions, open: (Int) throws(HCISocketError) -> any HCISocket
    ) throws(ProximityError) -> HCIController {
        guard (0...0xFFFE).contains(adapter) else {
            throw .unavailable("no Bluetooth adapter hci\(adapter); \(ProximityErrorMapping.simulatedHint)")
        }
        do {
            return HCIController(socket: try open(adapter), adapter: adapter, timeout: options.commandTimeout)
        } catch {
            throw ProximityErrorMapping.error(error, adapter: adapter)
        }
    }
}

/// Advertises through a BlueZ controller's raw HCI socket: non-connectable undirected advertising (ADV_NONCONN_IND)
/// on all three channels, from a static random address made for this advertiser, so that observers can link the
/// advert neither to the computer's public address nor to earlier sessions. Commands run on a Dispatch thread, one
/// at a time.
public final class BlueZAdvertiser: ProximityAdvertiser {
    private struct State {
        /// `nil` once closed.
        var controller: HCIController?
        var advertising = false
    }

    private let state: Mutex<State>
    private let options: BlueZOptions
    /// The address the advert comes from, for this advertiser's whole life.
    let address: StaticRandomAddress

    /// Opens adapter `hciN`; see `BlueZRadio.advertiser(adapter:options:)` for the errors.
    public convenience init(adapter: Int, options: BlueZOptions = BlueZOptions()) throws(ProximityError) {
        try self.init(adapter: adapter, options: options, open: LinuxHCISocket.open(adapter:))
    }

    /// Opens the adapter through `open` (a fake socket in tests), with an address from the system's generator.
    convenience init(adapter: Int, options: BlueZOptions, open: (Int) throws(HCISocketError) -> any HCISocket)
        throws(ProximityError)
    {
        var generator = SystemRandomNumberGenerator()
        try self.init(adapter: adapter, options: options, randomNumbers: &generator, open: open)
    }

    /// Opens the adapter through `open`, with an address drawn from `randomNumbers`.
    init(
        adapter: Int, options: BlueZOptions, randomNumbers: inout some RandomNumberGenerator,
        open: (Int) throws(HCISocketError) -> any HCISocket
    ) throws(ProximityError) {
        state = Mutex(State(controller: try BlueZRadio.controller(adapter: adapter, options: options, open: open)))
        self.options = options
        address = StaticRandomAddress(using: &randomNumbers)
    }

    /// Sends LE Set Advertising Enable (off, "command disallowed" ignored), LE Set Random Address, LE Set
    /// Advertising Parameters (own address random), LE Set Advertising Data and LE Set Advertising Enable (on), each
    /// waiting for the controller's answer. The controller refuses the address while it scans (for another program):
    /// that fails the call rather than advertise from the public address.
    public func startAdvertising(_ advertisingData: [UInt8]) async throws(ProximityError) {
        guard advertisingData.count <= HCICommand.maximumAdvertisingDataCount else {
            throw .advertisingDataTooLong(advertisingData.count)
        }
        let (interval, address) = (options.advertisingInterval, address)
        try await offloaded { () throws(ProximityError) in
            try self.state.withLock { state throws(ProximityError) in
                guard let controller = state.controller else { throw .failed("the advertiser is closed") }
                try controller.run(.setAdvertisingEnable(false), allowing: [.commandDisallowed])
                state.advertising = false
                try controller.run(.setRandomAddress(address))
                try controller.run(.setAdvertisingParameters(interval: interval, ownAddressType: .random))
                try controller.run(.setAdvertisingData(advertisingData))
                try controller.run(.setAdvertisingEnable(true))
                state.advertising = true
            }
        }
    }

    /// Sends LE Set Advertising Enable (off) if advertising; a failure leaves nothing more to do, so it is ignored.
    public func stopAdvertising() async {
        await offloaded { self.state.withLock { Self.stop(&$0) } }
    }

    /// Stops advertising and closes the socket.
    public func close() async {
        await offloaded {
            self.state.withLock { state in
                Self.stop(&state)
                state.controller?.socket.close()
                state.controller = nil
            }
        }
    }

    /// A forgotten `close()`: restore the controller and release the socket.
    deinit {
        state.withLock { state in
            Self.stop(&state)
            state.controller?.socket.close()
        }
    }

    private static func stop(_ state: inout State) {
        guard state.advertising, let controller = state.controller else { return }
        state.advertising = false
        try? controller.run(.setAdvertisingEnable(false), allowing: [.commandDisallowed])
    }
}

/// Scans through a BlueZ controller's raw HCI socket: a passive scan with duplicate filtering off, so that every
/// advertisement is reported. A dedicated thread (`ReaderThread`) waits for the LE Advertising Reports and calls
/// `onAdvert`.
public final class BlueZScanner: ProximityScanner {
    private struct State {
        /// `nil` once closed.
        var controller: HCIController?
        var reader: ReaderThread?
    }

    private let state: Mutex<State>
    private let options: BlueZOptions

    /// Opens adapter `hciN`; see `BlueZRadio.scanner(adapter:options:)` for the errors.
    public convenience init(adapter: Int, options: BlueZOptions = BlueZOptions()) throws(ProximityError) {
        try self.init(adapter: adapter, options: options, open: LinuxHCISocket.open(adapter:))
    }

    /// Opens the adapter through `open`: a fake socket in tests.
    init(adapter: Int, options: BlueZOptions, open: (Int) throws(HCISocketError) -> any HCISocket)
        throws(ProximityError)
    {
        state = Mutex(State(controller: try BlueZRadio.controller(adapter: adapter, options: options, open: open)))
        self.options = options
    }

    /// Sends LE Set Scan Enable (off, "command disallowed" ignored), LE Set Scan Parameters (passive) and LE Set Scan
    /// Enable (on, duplicates not filtered), then starts the reader thread. Scanning already? It restarts with the
    /// new callback. `onAdvert` runs on the reader thread and must not wait for `stopScanning()`.
    public func startScanning(_ onAdvert: @escaping @Sendable ([UInt8]) -> Void) async throws(ProximityError) {
        let (interval, window) = (options.scanInterval, options.scanWindow)
        try await offloaded { () throws(ProximityError) in
            try self.state.withLock { state throws(ProximityError) in
                guard let controller = state.controller else { throw .failed("the scanner is closed") }
                state.reader?.stop()
                state.reader = nil
                try controller.run(.setScanEnable(false), allowing: [.commandDisallowed])
                try controller.run(.setScanParameters(interval: interval, window: window))
                try controller.run(.setScanEnable(true))
                do throws(ProximityError) {
                    state.reader = try ReaderThread(socket: controller.socket, onAdvert: onAdvert)
                } catch {
                    try? controller.run(.setScanEnable(false), allowing: [.commandDisallowed])
                    throw error
                }
            }
        }
    }

    /// Ends the reader thread, waiting for it, then sends LE Set Scan Enable (off). No `onAdvert` call happens after
    /// this returns.
    public func stopScanning() async {
        await offloaded { self.state.withLock { Self.stop(&$0) } }
    }

    /// Stops scanning and closes the socket.
    public func close() async {
        await offloaded {
            self.state.withLock { state in
                Self.stop(&state)
                state.controller?.socket.close()
                state.controller = nil
            }
        }
    }

    /// A forgotten `close()`: end the reader thread, restore the controller and release the socket.
    deinit {
        state.withLock { state in
            Self.stop(&state)
            state.controller?.socket.close()
        }
    }

    private static func stop(_ state: inout State) {
        guard let reader = state.reader else { return }
        reader.stop()
        state.reader = nil
        try? state.controller?.run(.setScanEnable(false), allowing: [.commandDisallowed])
    }
}
