// Writes small nsys-schema SQLite files for reader tests, with exactly the rows a test needs.
#pragma once
#include <sqlite3.h>

#include <stdexcept>
#include <string>

namespace testing_fixture {

class NsysFixture {
 public:
  // schema_table: "META_DATA_EXPORT" (2023+) or "EXPORT_META_DATA" (2022.4).
  explicit NsysFixture(const std::string& path, const std::string& meta_table = "META_DATA_EXPORT",
                       bool kernel_table = true, const std::string& extra_kernel_columns = "") {
    std::remove(path.c_str());
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("fixture: cannot create " + path);
    exec("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)");
    exec("CREATE TABLE " + meta_table + " (name TEXT, value TEXT)");
    exec("INSERT INTO " + meta_table + " VALUES ('EXPORT_SCHEMA_VERSION','3.25.0'),('EXPORT_PRODUCT_VERSION','2026.2.1.210')");
    exec("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)");
    exec("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1000000000000, '', '')");
    exec("CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INTEGER, value TEXT)");
    exec("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (0,'Local','Hostname',0,'host-a'),"
         "(0,'Local','DeviceEnvironment',0,'WANDB_API_KEY=fixture-secret')");
    if (kernel_table)
      exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,"
           " contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
           " demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL" + extra_kernel_columns + ")");
    exec("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,"
         " globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER)");
    exec("CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,"
         " category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,"
         " domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,"
         " int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT)");
    exec("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,"
         " contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
         " bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL)");
  }
  ~NsysFixture() { sqlite3_close(db_); }

  static long long gpid(long long pid) { return pid << 24; }
  static long long gtid(long long pid, long long tid) { return (pid << 24) | tid; }

  long long str(const std::string& s) {
    exec("INSERT OR IGNORE INTO StringIds (value) SELECT '" + s + "' WHERE NOT EXISTS (SELECT 1 FROM StringIds WHERE value='" + s + "')");
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_, ("SELECT id FROM StringIds WHERE value='" + s + "'").c_str(), -1, &st, nullptr);
    sqlite3_step(st);
    long long id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
  }
  void kernel(long long pid, int device, int stream, long long start, long long end, const std::string& name,
              long long corr) {
    long long n = str(name);
    exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start,end,deviceId,contextId,streamId,correlationId,globalPid,"
         "demangledName,shortName) VALUES (" + std::to_string(start) + "," + std::to_string(end) + "," +
         std::to_string(device) + ",1," + std::to_string(stream) + "," + std::to_string(corr) + "," +
         std::to_string(gpid(pid)) + "," + std::to_string(n) + "," + std::to_string(n) + ")");
  }
  void runtime(long long pid, long long tid, long long start, long long end, const std::string& name, long long corr) {
    exec("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" + std::to_string(start) + "," + std::to_string(end) + ",1," +
         std::to_string(gtid(pid, tid)) + "," + std::to_string(corr) + "," + std::to_string(str(name)) + ",0,NULL)");
  }
  // A registered-string NVTX range (text NULL, textId set), as NCCL writes them.
  void range(long long pid, long long tid, long long start, long long end, const std::string& name, int domain) {
    exec("INSERT INTO NVTX_EVENTS (start,end,eventType,globalTid,textId,domainId) VALUES (" + std::to_string(start) +
         "," + std::to_string(end) + ",59," + std::to_string(gtid(pid, tid)) + "," + std::to_string(str(name)) + "," +
         std::to_string(domain) + ")");
  }
  void domain_create(long long pid, int domain, const std::string& name) {
    exec("INSERT INTO NVTX_EVENTS (start,eventType,globalTid,text,domainId) VALUES (0,75," +
         std::to_string(gtid(pid, pid)) + ",'" + name + "'," + std::to_string(domain) + ")");
  }
  void memcpy_row(long long pid, long long start, long long end, long long bytes, int kind) {
    exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (" + std::to_string(start) + "," + std::to_string(end) +
         ",0,1,7,NULL," + std::to_string(gpid(pid)) + "," + std::to_string(bytes) + "," + std::to_string(kind) + ")");
  }
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string e = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error("fixture: " + e + " in " + sql);
    }
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace testing_fixture
