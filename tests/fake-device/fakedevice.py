#!/usr/bin/env python3
"""A fake usbmuxd with fake iOS devices behind it, for stallwatch's tests.

It speaks the real protocols to the unmodified libimobiledevice/libusbmuxd
client, learnt from how those clients behave:

- usbmuxd's plist protocol on a unix socket (the client finds it through
  USBMUXD_SOCKET_ADDRESS=UNIX:PATH): 16-byte little-endian header (length,
  version 1, message 8 = plist, tag) and an XML plist.  ListDevices, Listen
  (then Attached/Detached events), Connect (PortNumber in network byte order
  read as a host integer; after Result 0 the socket is a raw pipe to the
  device port), ReadPairRecord, ReadBUID, SavePairRecord.
- lockdownd on device port 62078 without SSL: 32-bit big-endian length and a
  plist.  QueryType, GetValue, StartSession (EnableSessionSSL false),
  StopSession, StartService (EnableServiceSSL false), Goodbye.
- installation_proxy (Lookup) and debugserver (GDB remote packets:
  QEnvironmentHexEncoded, A, qLaunchSuccess, D) on ports StartService hands
  out.
- Device ports 27300..27309 lead to "apps": real Linux processes running the
  stallwatch agent on loopback ports, so what crosses the fake is real agent
  traffic.  debugserver's A starts such a process with the environment it
  was given.

Used as a module by the tests (FakeUsbmuxd), or run alone:
  fakedevice.py SOCKET [UDID:NAME:VERSION]...
"""
import os
import plistlib
import resource
import select
import socket
import struct
import subprocess
import sys
import threading
import time

LOCKDOWN_PORT = 62078
AGENT_PORTS = range(27300, 27310)
SERVICE_PORT_BASE = 49152

# usbmuxd result numbers
RESULT_OK, RESULT_BADCOMMAND, RESULT_BADDEV, RESULT_CONNREFUSED = 0, 1, 2, 3


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def pipe_sockets(a, b, stop):
    """Copies bytes both ways until either side closes or stop is set."""
    poller = select.poll()
    poller.register(a, select.POLLIN)
    poller.register(b, select.POLLIN)
    peer = {a.fileno(): b, b.fileno(): a}
    try:
        while not stop.is_set():
            for fd, _ in poller.poll(200):
                src = a if fd == a.fileno() else b
                try:
                    data = src.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                peer[fd].sendall(data)
    except OSError:
        pass


class App:
    """An app installed on a fake device.

    command: the Linux argv of the app (it runs with the agent preloaded);
    env: extra environment for it.  dev_signed: whether debugserver may
    launch it (get-task-allow)."""

    def __init__(self, bundle_id, command, env=None, executable=None, dev_signed=True):
        self.bundle_id = bundle_id
        self.command = command
        self.env = dict(env or {})
        self.executable = executable or bundle_id.split(".")[-1]
        self.dev_signed = dev_signed
        self.container = "/private/var/containers/Bundle/Application/5C0D0F7E-%s/%s.app" % (
            abs(hash(bundle_id)) % 100000, self.executable)
        self.processes = []

    @property
    def path(self):
        return self.container + "/" + self.executable


class Device:
    def __init__(self, udid, name="Test iPhone", product_type="iPhone14,2",
                 version="16.7.2", conn="USB"):
        self.udid = udid
        self.name = name
        self.product_type = product_type
        self.version = version
        self.conn = conn
        self.device_id = 0
        self.ports = {}          # device port -> (host, port) on loopback
        self.apps = {}           # bundle id -> App
        self.services = {}       # device port -> service name (started by lockdownd)
        self.next_service = SERVICE_PORT_BASE
        self.hang_lockdown = False
        self.ddi_mounted = True
        self.paired = True
        self.pipes = []          # (socket, stop event) of open connections
        self.lock = threading.Lock()

    def properties(self):
        props = {
            "ConnectionType": self.conn,
            "DeviceID": self.device_id,
            "SerialNumber": self.udid,
        }
        if self.conn == "USB":
            props.update({"ConnectionSpeed": 480000000, "LocationID": 0x14100000 + self.device_id,
                          "ProductID": 0x12a8})
        else:
            # BSD sockaddr_in for 127.0.0.2 where no lockdownd listens.
            props["NetworkAddress"] = bytes([16, 2, 0, 0, 127, 0, 0, 2]) + bytes(8)
            props["EscapedFullServiceName"] = self.udid + "._apple-mobdev2._tcp.local."
        return props

    def lockdown_values(self):
        return {
            "DeviceName": self.name,
            "ProductType": self.product_type,
            "ProductVersion": self.version,
            "UniqueDeviceID": self.udid,
            "DeviceClass": "iPhone",
            "BuildVersion": "20H115",
            "CPUArchitecture": "arm64e",
        }

    def map_port(self, port, addr):
        """Device port -> ('127.0.0.1', port) of a process on this host."""
        self.ports[port] = addr

    def free_agent_port(self):
        for port in AGENT_PORTS:
            if port not in self.ports:
                return port
        return None

    def launch(self, app, env, argv):
        """Starts app's Linux process as debugserver would start the iOS app:
        the agent listens on a free loopback port mapped to a device agent
        port."""
        port = self.free_agent_port()
        if port is None:
            raise RuntimeError("no free agent port")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        host_port = s.getsockname()[1]
        s.close()
        full_env = dict(os.environ)
        full_env.update(app.env)
        full_env.update(env)
        # On iOS the agent listens on 127.0.0.1:27300; here on a host port.
        full_env["STALLWATCH_LISTEN"] = "127.0.0.1:%d" % host_port
        full_env.setdefault("STALLWATCH_BUNDLE_ID", app.bundle_id)
        proc = subprocess.Popen(app.command + list(argv[1:]), env=full_env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        app.processes.append(proc)
        self.map_port(port, ("127.0.0.1", host_port))
        self.launched_env = env
        return proc

    def close_pipes(self):
        with self.lock:
            pipes, self.pipes = self.pipes, []
        for sock, stop in pipes:
            stop.set()
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class FakeUsbmuxd:
    def __init__(self, path, hang=False):
        raise_fd_limit()
        self.path = path
        self.hang = hang
        self.devices = {}        # device id -> Device
        self.next_id = 1
        self.listeners = []      # (socket, lock, tag)
        self.lock = threading.Lock()
        self.buid = "0A1B2C3D-0000-4000-8000-0123456789AB"
        self.host_id = "5E1F0B0A-1111-4222-8333-444455556666"
        self.stopping = False
        if os.path.exists(path):
            os.unlink(path)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(512)
        self.thread = threading.Thread(target=self.accept_loop, daemon=True)
        self.thread.start()

    # ---- device management (for tests) ----

    def add(self, device):
        with self.lock:
            device.device_id = self.next_id
            self.next_id += 1
            self.devices[device.device_id] = device
            listeners = list(self.listeners)
        for l in listeners:
            self.send_event(l, {"MessageType": "Attached", "DeviceID": device.device_id,
                                "Properties": device.properties()})
        return device

    def remove(self, device):
        with self.lock:
            self.devices.pop(device.device_id, None)
            listeners = list(self.listeners)
        device.close_pipes()
        for l in listeners:
            self.send_event(l, {"MessageType": "Detached", "DeviceID": device.device_id})

    def by_udid(self, udid):
        with self.lock:
            for d in self.devices.values():
                if d.udid == udid:
                    return d
        return None

    def close(self):
        self.stopping = True
        try:
            self.server.close()
        except OSError:
            pass
        with self.lock:
            devices = list(self.devices.values())
            listeners, self.listeners = self.listeners, []
        for d in devices:
            d.close_pipes()
            for app in d.apps.values():
                for p in app.processes:
                    if p.poll() is None:
                        p.terminate()
                        try:
                            p.wait(5)
                        except subprocess.TimeoutExpired:
                            p.kill()
        for sock, _, _ in listeners:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if os.path.exists(self.path):
            os.unlink(self.path)

    # ---- usbmuxd protocol ----

    def accept_loop(self):
        while not self.stopping:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    @staticmethod
    def packet(tag, obj):
        body = plistlib.dumps(obj, fmt=plistlib.FMT_XML)
        return struct.pack("<IIII", 16 + len(body), 1, 8, tag) + body

    def send_event(self, listener, obj):
        sock, lock, tag = listener
        try:
            with lock:
                sock.sendall(self.packet(0, obj))
        except OSError:
            pass

    def serve(self, conn):
        try:
            self.serve_requests(conn)
        except (EOFError, OSError, ValueError, plistlib.InvalidFileException):
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def serve_requests(self, conn):
        while True:
            length, version, message, tag = struct.unpack("<IIII", recv_exact(conn, 16))
            if length < 16 or length > 1 << 20:
                return
            body = recv_exact(conn, length - 16)
            if self.hang:
                continue  # accepts, reads, never answers
            if message != 8:
                conn.sendall(self.packet(tag, {"MessageType": "Result", "Number": RESULT_BADCOMMAND}))
                continue
            req = plistlib.loads(body)
            kind = req.get("MessageType")
            if kind == "ListDevices":
                with self.lock:
                    devs = list(self.devices.values())
                conn.sendall(self.packet(tag, {"DeviceList": [
                    {"MessageType": "Attached", "DeviceID": d.device_id,
                     "Properties": d.properties()} for d in devs]}))
            elif kind == "Listen":
                self.listen(conn, tag)
                return
            elif kind == "Connect":
                if self.connect(conn, tag, req):
                    return
            elif kind == "ReadBUID":
                conn.sendall(self.packet(tag, {"BUID": self.buid}))
            elif kind == "ReadPairRecord":
                dev = self.by_udid(req.get("PairRecordID", ""))
                if not dev or not dev.paired:
                    conn.sendall(self.packet(tag, {"MessageType": "Result", "Number": RESULT_BADDEV}))
                else:
                    record = {"HostID": self.host_id, "SystemBUID": self.buid,
                              "WiFiMACAddress": "00:00:00:00:00:00"}
                    data = plistlib.dumps(record, fmt=plistlib.FMT_XML)
                    conn.sendall(self.packet(tag, {"PairRecordData": data}))
            elif kind in ("SavePairRecord", "DeletePairRecord"):
                conn.sendall(self.packet(tag, {"MessageType": "Result", "Number": RESULT_OK}))
            else:
                conn.sendall(self.packet(tag, {"MessageType": "Result", "Number": RESULT_BADCOMMAND}))

    def listen(self, conn, tag):
        lock = threading.Lock()
        listener = (conn, lock, tag)
        with lock:
            conn.sendall(self.packet(tag, {"MessageType": "Result", "Number": RESULT_OK}))
            with self.lock:
                devs = list(self.devices.values())
                self.listeners.append(listener)
            for d in devs:
                conn.sendall(self.packet(0, {"MessageType": "Attached", "DeviceID": d.device_id,
                                             "Properties": d.properties()}))
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        with self.lock:
            if listener in self.listeners:
                self.listeners.remove(listener)

    def connect(self, conn, tag, req):
        """Returns True when conn became a pipe (and was served to its end)."""
        with self.lock:
            dev = self.devices.get(req.get("DeviceID", 0))
        # libusbmuxd sends htons(port) as a plain integer.
        raw = req.get("PortNumber", 0) & 0xFFFF
        port = ((raw & 0xFF) << 8) | (raw >> 8)
        if not dev or dev.conn != "USB":
            conn.sendall(self.packet(tag, {"MessageType": "Result", "Number": RESULT_BADDEV}))
            return False
        if port == LOCKDOWN_PORT:
            handler = Lockdownd(self, dev).serve
        elif port in dev.services:
            name = dev.services[port]
            handler = (InstallationProxy(dev).serve if name == "com.apple.mobile.installation_proxy"
                       else Debugserver(dev).serve)
        elif port in dev.ports:
            target = dev.ports[port]
            try:
                peer = socket.create_connection(target, timeout=2)
                peer.settimeout(None)
            except OSError:
                conn.sendall(self.packet(tag, {"MessageType": "Result",
                                               "Number": RESULT_CONNREFUSED}))
                return False
            handler = lambda c, stop: pipe_then_close(c, peer, stop)
        else:
            conn.sendall(self.packet(tag, {"MessageType": "Result", "Number": RESULT_CONNREFUSED}))
            return False
        conn.sendall(self.packet(tag, {"MessageType": "Result", "Number": RESULT_OK}))
        stop = threading.Event()
        with dev.lock:
            dev.pipes.append((conn, stop))
        try:
            handler(conn, stop)
        finally:
            with dev.lock:
                if (conn, stop) in dev.pipes:
                    dev.pipes.remove((conn, stop))
        return True


def pipe_then_close(conn, peer, stop):
    try:
        pipe_sockets(conn, peer, stop)
    finally:
        peer.close()


class PlistService:
    """The framing of lockdownd and installation_proxy: 32-bit big-endian
    length, then a plist (XML or binary; answers are XML)."""

    @staticmethod
    def recv(conn):
        (length,) = struct.unpack(">I", recv_exact(conn, 4))
        if length > 1 << 20:
            raise EOFError
        return plistlib.loads(recv_exact(conn, length))

    @staticmethod
    def send(conn, obj):
        body = plistlib.dumps(obj, fmt=plistlib.FMT_XML)
        conn.sendall(struct.pack(">I", len(body)) + body)


_public_key = []


def device_public_key():
    """An RSA public key (PKCS#1 PEM) such as a device hands out before pairing,
    so that libimobiledevice gets as far as asking for a Pair."""
    if not _public_key:
        try:
            priv = subprocess.run(["openssl", "genrsa", "1024"], capture_output=True,
                                  check=True).stdout
            pub = subprocess.run(["openssl", "rsa", "-RSAPublicKey_out"], input=priv,
                                 capture_output=True, check=True).stdout
            _public_key.append(pub)
        except (OSError, subprocess.CalledProcessError):
            _public_key.append(None)
    return _public_key[0]


class Lockdownd(PlistService):
    def __init__(self, mux, dev):
        self.mux = mux
        self.dev = dev
        self.session = None

    def serve(self, conn, stop):
        if self.dev.hang_lockdown:
            while not stop.is_set() and conn.recv(4096):
                pass  # accepts, reads, never answers
            return
        while not stop.is_set():
            req = self.recv(conn)
            reply = self.handle(req)
            if reply is None:
                return
            self.send(conn, reply)

    def handle(self, req):
        kind = req.get("Request")
        reply = {"Request": kind}
        if kind == "QueryType":
            reply["Type"] = "com.apple.mobile.lockdown"
        elif kind == "GetValue":
            values = self.dev.lockdown_values()
            key = device_public_key() if req.get("Key") == "DevicePublicKey" else None
            if key:
                values["DevicePublicKey"] = key
            key = req.get("Key")
            if req.get("Domain"):
                reply["Error"] = "MissingValue"
            elif key is None:
                reply["Value"] = values
            elif key in values:
                reply["Key"] = key
                reply["Value"] = values[key]
            else:
                reply["Error"] = "MissingValue"
        elif kind == "StartSession":
            if not self.dev.paired or req.get("HostID") != self.mux.host_id:
                reply["Error"] = "InvalidHostID"
            else:
                self.session = "7B0C1D2E-3F40-4152-8364-758697A8B9CA"
                reply.update({"SessionID": self.session, "EnableSessionSSL": False})
        elif kind == "StopSession":
            self.session = None
        elif kind == "StartService":
            reply.update(self.start_service(req.get("Service", "")))
        elif kind == "Pair":
            reply["Error"] = "PairingDialogResponsePending"
        elif kind == "Goodbye":
            return None
        else:
            reply["Error"] = "InvalidRequest"
        return reply

    def start_service(self, name):
        if not self.session:
            return {"Error": "SessionInactive"}
        known = ["com.apple.mobile.installation_proxy"]
        if self.dev.ddi_mounted and int(self.dev.version.split(".")[0]) < 17:
            known.append("com.apple.debugserver")
        if name not in known:
            return {"Error": "InvalidService", "Service": name}
        with self.dev.lock:
            port = self.dev.next_service
            self.dev.next_service += 1
            self.dev.services[port] = name
        return {"Service": name, "Port": port, "EnableServiceSSL": False}


class InstallationProxy(PlistService):
    def __init__(self, dev):
        self.dev = dev

    def serve(self, conn, stop):
        while not stop.is_set():
            req = self.recv(conn)
            if req.get("Command") != "Lookup":
                self.send(conn, {"Status": "Complete", "Error": "UnknownCommand"})
                continue
            wanted = req.get("ClientOptions", {}).get("BundleIDs")
            result = {}
            for bid, app in self.dev.apps.items():
                if wanted is not None and bid not in wanted:
                    continue
                entitlements = {"application-identifier": "ABCDE12345." + bid}
                if app.dev_signed:
                    entitlements["get-task-allow"] = True
                result[bid] = {
                    "CFBundleIdentifier": bid,
                    "CFBundleExecutable": app.executable,
                    "CFBundleName": app.executable,
                    "Path": app.container,
                    "ApplicationType": "User",
                    "Entitlements": entitlements,
                    "SignerIdentity": ("Apple Development: Test (ABCDE12345)" if app.dev_signed
                                       else "Apple iPhone OS Application Signing"),
                }
            self.send(conn, {"LookupResult": result, "Status": "Complete"})


class Debugserver:
    """GDB remote serial protocol, acknowledged mode, as debugserver speaks it."""

    def __init__(self, dev):
        self.dev = dev
        self.env = {}
        self.launched = None
        self.error = None

    @staticmethod
    def frame(payload):
        data = payload.encode("latin-1")
        return b"$" + data + b"#%02x" % (sum(data) & 0xFF)

    def serve(self, conn, stop):
        buf = b""
        while not stop.is_set():
            chunk = conn.recv(65536)
            if not chunk:
                return
            buf += chunk
            while True:
                buf = buf.lstrip(b"+")
                start = buf.find(b"$")
                if start < 0:
                    buf = b""
                    break
                end = buf.find(b"#", start)
                if end < 0 or len(buf) < end + 3:
                    break
                payload = buf[start + 1:end].decode("latin-1")
                checksum = int(buf[end + 1:end + 3], 16)
                buf = buf[end + 3:]
                if sum(payload.encode("latin-1")) & 0xFF != checksum:
                    conn.sendall(b"-")
                    continue
                conn.sendall(b"+")
                reply = self.handle(payload)
                delay = getattr(self.dev, "debugserver_delay", 0)
                if delay:
                    time.sleep(delay)
                conn.sendall(self.frame(reply))
                if payload == "D":
                    return

    def handle(self, p):
        if p.startswith("QEnvironmentHexEncoded:"):
            text = bytes.fromhex(p.split(":", 1)[1]).decode()
            name, _, value = text.partition("=")
            self.env[name] = value
            return "OK"
        if p.startswith("QSetDisableASLR") or p.startswith("QSetMaxPacketSize") \
                or p == "QStartNoAckMode" or p.startswith("QLaunchArch"):
            return "OK"
        if p.startswith("A"):
            return self.launch(p[1:])
        if p == "qLaunchSuccess":
            return self.error or "OK"
        if p == "qProcessInfo":
            if not self.launched:
                return "E44"
            return "pid:%x;" % self.launched.pid
        if p == "D":
            return "OK"
        if p == "k":
            if self.launched:
                self.launched.kill()
            return "X09"
        return ""

    def launch(self, args):
        # A<len>,<index>,<hex>,... : the argument strings, hex-encoded.
        fields = args.split(",")
        argv = []
        for i in range(0, len(fields) - 2, 3):
            argv.append(bytes.fromhex(fields[i + 2]).decode())
        if not argv:
            return "E01"
        app = next((a for a in self.dev.apps.values() if a.path == argv[0]), None)
        if not app:
            self.error = "Efailed to get the task for process -1"
            return "OK"
        if not app.dev_signed:
            self.error = "Efailed to get the task for process -1"
            return "OK"
        self.launched = self.dev.launch(app, self.env, argv)
        return "OK"


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    mux = FakeUsbmuxd(sys.argv[1])
    for spec in sys.argv[2:] or ["00008110-000A1B2C3D4E5F60:Fake iPhone:16.7.2"]:
        udid, name, version = spec.split(":")
        mux.add(Device(udid, name=name, version=version))
    print("fake usbmuxd on", sys.argv[1], flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        mux.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
